package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/internal/kwindex"
	"github.com/postgram-go/postgram/internal/query"
)

// goldenPath holds what PostgreSQL 15 computes for a corpus of documents
// and keyword queries: each document's to_tsvector('simple', doc) and, per
// query, ts_rank_cd against the OR of the terms' plainto_tsquery, whether
// the AND and the OR of the terms match, and which terms match. It is
// written by TestWriteRankGolden (set POSTGRAM_SQLITE_GOLDEN to a
// PostgreSQL URL) so the comparison needs no database.
const goldenPath = "testdata/pg_rank_golden.json"

type golden struct {
	Queries [][]string  `json:"queries"`
	Docs    []goldenDoc `json:"docs"`
}

type goldenDoc struct {
	Doc    string              `json:"doc"`
	Vector map[string][]uint16 `json:"vector"`
	// Results has, per query: ts_rank_cd, the AND matches, the OR matches
	// (1 or 0) and the mask of matching terms.
	Results [][4]float64 `json:"results"`
}

// rankCorpus builds the documents and queries: hand-picked cases (compound
// identifiers, hyphenation, URLs, repeated and distant words, tags, the
// position limits) and random ones over a small vocabulary, where covers,
// repeats and overlapping terms are frequent.
func rankCorpus() golden {
	docs := []string{
		"Ticket ABC-1234 tracks the login bug",
		"ABC and 1234 appear separately here",
		"Send an e-mail to the team about the e-mail outage",
		"alpha bravo charlie alpha bravo alpha",
		"the quick brown fox jumps over the lazy dog; the dog sleeps",
		"See https://example.com/a/b.html or mail ops@example.com, v1.2.3 released 2024-05-01",
		"<p>HTML <b>bold</b> text</p> &amp; entities <script>var x = 1;</script> after",
		"state-of-the-art co-operate-2 x-1-y foo--bar café-au-lait Ünïcödé 中文 naïve",
		strings.Repeat("word ", 300) + "tail",
		strings.Repeat("a b ", 200) + "c",
		"PostgreSQL tuning guide: shared buffers, work mem and autovacuum settings",
		"Decision: we use pgvector with HNSW indexes for embeddings",
	}
	var long []string
	for i := range 16400 {
		long = append(long, fmt.Sprintf("w%d", i%50))
	}
	docs = append(docs, strings.Join(long, " ")+" omega omega alpha")
	queries := [][]string{
		{"ABC-1234"}, {"abc", "1234"}, {"e-mail"}, {"mail", "team"}, {"alpha"}, {"alpha", "bravo"},
		{"alpha", "charlie", "delta"}, {"dog", "fox"}, {"the", "dog"}, {"https://example.com/a/b.html"},
		{"example.com", "v1.2.3"}, {"bold", "text", "entities"}, {"var"}, {"state-of-the-art"},
		{"café-au-lait", "中文"}, {"word", "tail"}, {"a", "c"}, {"b"}, {"omega", "alpha"}, {"w1", "w2", "omega"},
		{"pgvector", "HNSW", "embeddings", "decision"}, {"shared", "buffers", "autovacuum"}, {"<b>"}, {"---", "alpha"},
	}
	vocab := strings.Fields("red green blue cyan teal red-green x1 y2 z-3 one two three four five six alpha beta")
	r := rand.New(rand.NewPCG(1, 2))
	for range 150 {
		n := 3 + r.IntN(60)
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[r.IntN(len(vocab))]
		}
		docs = append(docs, strings.Join(w, " "))
	}
	for range 60 {
		n := 1 + r.IntN(4)
		q := make([]string, n)
		for i := range q {
			q[i] = vocab[r.IntN(len(vocab))]
		}
		queries = append(queries, q)
	}
	out := golden{Queries: queries, Docs: make([]goldenDoc, len(docs))}
	for i, d := range docs {
		out.Docs[i].Doc = d
	}
	return out
}

func TestWriteRankGolden(t *testing.T) {
	url := os.Getenv("POSTGRAM_SQLITE_GOLDEN")
	if url == "" {
		t.Skip("set POSTGRAM_SQLITE_GOLDEN to a PostgreSQL URL to regenerate " + goldenPath)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	corpus := rankCorpus()
	for i := range corpus.Docs {
		d := &corpus.Docs[i]
		d.Vector = map[string][]uint16{}
		rows, err := conn.Query(ctx, "SELECT lexeme, positions FROM unnest(to_tsvector('simple', $1))", d.Doc)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var lex string
			var pos []int16
			if err := rows.Scan(&lex, &pos); err != nil {
				t.Fatal(err)
			}
			for _, p := range pos {
				d.Vector[lex] = append(d.Vector[lex], uint16(p))
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		for _, terms := range corpus.Queries {
			args := []any{d.Doc}
			var tq []string
			for _, term := range terms {
				args = append(args, term)
				tq = append(tq, fmt.Sprintf("plainto_tsquery('simple', $%d)", len(args)))
			}
			var maskSQL []string
			for k, x := range tq {
				maskSQL = append(maskSQL, fmt.Sprintf("(CASE WHEN v @@ %s THEN %d ELSE 0 END)", x, 1<<k))
			}
			sql := fmt.Sprintf(`SELECT ts_rank_cd(v, %s), v @@ (%s), v @@ (%s), %s FROM to_tsvector('simple', $1) v`,
				strings.Join(tq, " || "), strings.Join(tq, " && "), strings.Join(tq, " || "), strings.Join(maskSQL, " + "))
			var rank float32
			var all, anyMatch bool
			var mask int64
			if err := conn.QueryRow(ctx, sql, args...).Scan(&rank, &all, &anyMatch, &mask); err != nil {
				t.Fatal(err)
			}
			d.Results = append(d.Results, [4]float64{float64(rank), b2f(all), b2f(anyMatch), float64(mask)})
		}
	}
	b, err := json.Marshal(corpus)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldenPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRankGolden checks lexemes, positions, matching and ts_rank_cd against
// PostgreSQL's answers: ranks must be equal as float4, not merely close.
func TestRankGolden(t *testing.T) {
	b, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	var corpus golden
	if err := json.Unmarshal(b, &corpus); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, d := range corpus.Docs {
		vec := chunkVector(d.Doc)
		got := map[string][]uint16{}
		for _, l := range vec {
			got[l.Word] = l.Pos
		}
		if len(got) != len(d.Vector) {
			t.Errorf("%.40q: %d lexemes, PostgreSQL has %d", d.Doc, len(got), len(d.Vector))
		}
		for lex, pos := range d.Vector {
			if !slices.Equal(got[lex], pos) {
				t.Errorf("%.40q: lexeme %q positions %v, PostgreSQL %v", d.Doc, lex, got[lex], pos)
			}
		}
		tsv := kwindex.Encode(vec)
		for qi, qterms := range corpus.Queries {
			want := d.Results[qi]
			terms := kwindex.Compile(qterms, nil)
			var dt kwindex.DocTerms
			if err := terms.Scan(tsv, &dt); err != nil {
				t.Fatal(err)
			}
			mask := terms.Mask(&dt)
			anyMatch := mask != 0
			allMatch := false // an all-empty query matches nothing
			for _, ls := range terms.Of {
				allMatch = allMatch || len(ls) > 0
			}
			for i := range qterms {
				if len(terms.Of[i]) > 0 && mask&(1<<i) == 0 {
					allMatch = false
				}
			}
			rank := terms.RankCD(&dt)
			if rank != float32(want[0]) || allMatch != (want[1] == 1) || anyMatch != (want[2] == 1) || mask != uint32(want[3]) {
				t.Errorf("%.40q %q: rank %v all %v any %v mask %b; PostgreSQL %v", d.Doc, qterms, rank, allMatch, anyMatch, mask, want)
			}
			checked++
		}
	}
	t.Logf("checked %d (document, query) pairs against PostgreSQL", checked)
}

// TestVectorMatchesQueryLexemes proves query.Vector (positions) and query.Lexemes
// (the library's lexeme sets) are the same parser.
func TestVectorMatchesQueryLexemes(t *testing.T) {
	for _, d := range rankCorpus().Docs {
		checkSameLexemes(t, d.Doc)
	}
}

func checkSameLexemes(t *testing.T, s string) {
	t.Helper()
	var words []string
	for _, l := range query.Vector(s) {
		words = append(words, l.Word)
	}
	if want := query.Lexemes(s); !slices.Equal(words, want) {
		t.Fatalf("query.Vector(%q) lexemes %q, query.Lexemes %q", s, words, want)
	}
}

func FuzzVectorMatchesQueryLexemes(f *testing.F) {
	for _, d := range rankCorpus().Docs[:20] {
		f.Add(d.Doc)
	}
	f.Add("\xff\xfe\xc3 <a href='x y'>z</a> a.b@c.de 1.2e-5 -7 ~/x/y.txt")
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		checkSameLexemes(t, s)
	})
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
