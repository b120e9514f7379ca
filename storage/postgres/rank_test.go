package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/internal/tsrank"
)

// TestRankMatchesPostgreSQL: ranking the tsvector text PostgreSQL returns
// with tsrank gives exactly ts_rank_cd's value and @@'s term matches.
func TestRankMatchesPostgreSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openSmall(t)
	defer st.Close()
	docs := []string{
		"Ticket ABC-1234 tracks the login bug; abc 1234 again",
		"Send an e-mail to the team about the e-mail outage",
		"it's Bob's \\ back-slash 'quoted' text",
		"alpha bravo charlie alpha bravo alpha",
		strings.Repeat("word ", 300) + "tail alpha",
		"Größe café 東京 naïve",
	}
	var long []string
	for i := range 16500 {
		long = append(long, fmt.Sprintf("w%d", i%40))
	}
	docs = append(docs, strings.Join(long, " ")) // positions saturate at 16383
	r := rand.New(rand.NewPCG(1, 2))
	vocab := []string{"alpha", "bravo", "charlie", "delta", "echo", "abc-1234", "e-mail", "it's"}
	for range 40 {
		var w []string
		for range 3 + r.IntN(30) {
			w = append(w, vocab[r.IntN(len(vocab))])
		}
		docs = append(docs, strings.Join(w, " "))
	}
	queries := [][]string{
		{"alpha"}, {"alpha", "bravo"}, {"ABC-1234", "login"}, {"e-mail", "outage", "team"},
		{"charlie", "delta", "echo", "alpha", "bravo"}, {"w3", "w7"}, {"it's", "quoted", "back-slash"},
		{"größe", "東京"}, {"tail", "word"}, {"nothing", "here"},
	}
	for _, terms := range queries {
		lex, err := st.termLexemes(ctx, terms)
		if err != nil {
			t.Fatal(err)
		}
		q := tsrank.Compile(lex)
		var parts []string
		for i := range terms {
			parts = append(parts, fmt.Sprintf("plainto_tsquery('simple', $%d)", i+2))
		}
		sql := "SELECT to_tsvector('simple', $1)::text, ts_rank_cd(to_tsvector('simple', $1), " + strings.Join(parts, " || ") + ")"
		for i := range terms {
			sql += fmt.Sprintf(", to_tsvector('simple', $1) @@ plainto_tsquery('simple', $%d)", i+2)
		}
		for _, doc := range docs {
			args := []any{doc}
			for _, term := range terms {
				args = append(args, term)
			}
			var tsv string
			var want float32
			matches := make([]bool, len(terms))
			dst := []any{&tsv, &want}
			for i := range matches {
				dst = append(dst, &matches[i])
			}
			if err := st.pool.QueryRow(ctx, sql, args...).Scan(dst...); err != nil {
				t.Fatal(err)
			}
			var d tsrank.Doc
			if err := scanTSVector(tsv, q, &d); err != nil {
				t.Fatalf("doc %.40q: %v", doc, err)
			}
			// The binary form the scoring probe reads gives the same positions.
			rows, err := st.pool.Query(ctx, "SELECT to_tsvector('simple', $1)", pgx.QueryResultFormats{1}, doc)
			if err != nil {
				t.Fatal(err)
			}
			var db tsrank.Doc
			for rows.Next() {
				if err := scanTSVectorBinary(rows.RawValues()[0], q, &db); err != nil {
					t.Fatalf("doc %.40q: binary: %v", doc, err)
				}
			}
			rows.Close()
			if diff := cmp.Diff(d, db, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("doc %.40q: binary and text forms differ (-text +binary):\n%s", doc, diff)
			}
			if got := q.RankCD(&d); got != want {
				t.Errorf("terms %q doc %.60q: rank %v, ts_rank_cd %v", terms, doc, got, want)
			}
			mask := q.Mask(&d)
			for i, m := range matches {
				if (mask&(1<<i) != 0) != m {
					t.Errorf("terms %q doc %.60q: term %q matched %v, PostgreSQL says %v", terms, doc, terms[i], !m, m)
				}
			}
		}
	}
}

func FuzzScanTSVector(f *testing.F) {
	for _, s := range []string{"", "'a':1", "'a':1,2A 'b''c':3 'd\\\\e'", "'x", "'a':", "'a':1,", "'a':99999"} {
		f.Add(s)
	}
	q := tsrank.Compile([][]string{{"a"}, {"b'c", "x"}})
	f.Fuzz(func(t *testing.T, s string) {
		var d tsrank.Doc
		_ = scanTSVector(s, q, &d) // must not panic
		_ = q.RankCD(&d)
		_ = scanTSVectorBinary([]byte(s), q, &d)
		_ = q.RankCD(&d)
	})
}
