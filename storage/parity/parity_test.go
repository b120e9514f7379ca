// Package parity_test checks that the two backends answer searches alike:
// on a fixed corpus, with the deterministic embedder, every query returns
// the same top-10 evidence set (entity ids) on SQLite and on PostgreSQL.
package parity_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/transfer"
)

const dims = 128

// Vocabularies of the generated corpus. Every content word is drawn from
// lists large enough that no query's keyword matches exceed the 200-chunk
// pool (checked by the test), so both backends rank the same full pool.
var (
	services = []string{"checkout", "billing", "ledger", "inventory", "search", "gateway", "scheduler", "mailer", "auth", "reporting", "payroll", "catalog"}
	failures = []string{"timeout", "deadlock", "overflow", "crash", "leak", "regression", "outage", "throttling"}
	nouns    = []string{"river", "mountain", "harbor", "lantern", "orchard", "meadow", "glacier", "canyon", "village", "library",
		"garden", "bridge", "forest", "island", "valley", "desert", "castle", "market", "tower", "workshop",
		"compass", "anchor", "beacon", "quarry", "prairie", "lagoon", "summit", "estuary", "thicket", "plateau"}
	verbs = []string{"crossed", "painted", "measured", "guarded", "repaired", "mapped", "visited", "described", "photographed", "restored",
		"surveyed", "sketched", "documented", "explored", "rebuilt"}
	adjectives = []string{"quiet", "ancient", "bright", "narrow", "frozen", "golden", "hidden", "distant", "crowded", "silent",
		"windy", "fertile", "rugged", "misty", "sunlit"}
	people   = []string{"alice", "bruno", "chiara", "dmitri", "eun", "farah", "goran", "hana", "ivo", "jules"}
	domains  = []string{"orion.example", "vega.example", "lyra.example", "altair.example"}
	multiLng = []string{
		"Der Fluss fließt leise durch die Straße am Morgen, über die alte Brücke.",
		"Le café du village ouvre à l'aube; la façade est peinte en bleu.",
		"El niño come una manzana mañana por la tarde en el jardín.",
		"Привет мир, это тестовый документ о библиотеке и реке.",
		"Η βιβλιοθήκη του χωριού είναι κοντά στο ποτάμι.",
		"Smörgåsbord och kaffe på ön vid sjön i juli.",
		"Zażółć gęślą jaźń przy starym moście nad rzeką.",
		"A façade of naïve café coöperation at the Straße corner.",
	}
	stopHeavy = []string{
		"It is what it is, and that is all there is to it, but the %s was not there when we were.",
		"If you can do it then do it, and if you can not then it will have to be done by them for %s.",
		"We had been there before and we would be there again if it were up to us and the %s.",
		"There is no more to it than this: the %s is where it is and we are where we are.",
	}
)

type corpusDoc struct {
	Type    postgram.EntityType
	Content string
	Tags    []string
}

// corpus generates the fixed documents: identifiers, e-mail addresses,
// version strings, prose, multilingual text, stopword-heavy sentences and
// a few documents long enough for several chunks.
func corpus() []corpusDoc {
	r := rand.New(rand.NewPCG(2024, 4))
	pick := func(l []string) string { return l[r.IntN(len(l))] }
	var docs []corpusDoc
	for i := range 70 { // incident tickets with identifiers and versions
		docs = append(docs, corpusDoc{Type: postgram.TypeTask, Tags: []string{"ticket"}, Content: fmt.Sprintf(
			"Ticket ABC-%04d: the %s service hit a %s after deploy v%d.%d.%d; error code E%03d. Owner %s.",
			1000+i*7, pick(services), pick(failures), 1+i%3, i%5, i%11, r.IntN(40), pick(people))})
	}
	for i := range 30 { // e-mail
		p, d := pick(people), pick(domains)
		docs = append(docs, corpusDoc{Type: postgram.TypeInteraction, Content: fmt.Sprintf(
			"E-mail from %s@%s about the %s %s review (thread %d).", p, d, pick(services), pick(nouns), i)})
	}
	for range 70 { // prose
		var b strings.Builder
		for range 3 {
			fmt.Fprintf(&b, "The %s %s near the %s was %s by %s. ", pick(adjectives), pick(nouns), pick(nouns), pick(verbs), pick(people))
		}
		docs = append(docs, corpusDoc{Type: postgram.TypeMemory, Content: strings.TrimSpace(b.String())})
	}
	for i, s := range multiLng { // multilingual, twice each with a twist
		docs = append(docs, corpusDoc{Type: postgram.TypeDocument, Content: s})
		docs = append(docs, corpusDoc{Type: postgram.TypeDocument, Content: fmt.Sprintf("%s (%s %d)", s, pick(nouns), i)})
	}
	for i := range 24 { // stopword-heavy
		docs = append(docs, corpusDoc{Type: postgram.TypeMemory, Content: fmt.Sprintf(stopHeavy[i%len(stopHeavy)], pick(nouns))})
	}
	for i := range 8 { // long, several chunks each
		var b strings.Builder
		fmt.Fprintf(&b, "Design document %d for the %s migration. ", i, pick(services))
		for range 40 {
			fmt.Fprintf(&b, "The %s %s %s the %s %s. ", pick(adjectives), pick(nouns), pick(verbs), pick(adjectives), pick(nouns))
		}
		docs = append(docs, corpusDoc{Type: postgram.TypeProject, Content: b.String()})
	}
	for i := range 8 { // people
		docs = append(docs, corpusDoc{Type: postgram.TypePerson, Content: fmt.Sprintf(
			"%s works on %s with %s; reach them at %s@%s.", strings.ToUpper(people[i][:1])+people[i][1:], pick(services), pick(people), people[i], pick(domains))})
	}
	return docs
}

// queries are of mixed kinds; the comment says which.
var queries = []string{
	// identifiers
	"ABC-1007", "ABC-1140", "ABC-1287 ABC-1049", "E017", "E003 timeout", "v2.3.7", "v1.0.0", "ABC-1000 v1.0.0",
	// e-mail
	"e-mail", "alice@orion.example", "hana@vega.example review", "E-mail from bruno",
	// phrases
	"checkout service hit a timeout", "ledger deadlock after deploy", "design document for the billing migration",
	"the ancient lantern near the harbor", "error code E012",
	// paraphrases (few or no shared words)
	"payment system broke down after release", "old lamp by the port", "who maintains the mail sender",
	"frozen ice field mapped by an explorer", "records of cash accounting going wrong",
	// stopword-heavy
	"what is the status of the ledger", "it is what it is", "there is no more to it than this", "the of and to", "is it there",
	"if you can do it then do it",
	// single words
	"ledger", "glacier", "café", "Straße", "мир", "βιβλιοθήκη", "naïve", "gateway", "throttling", "alice",
	// long multi-term
	"quiet river mountain harbor lantern orchard meadow glacier canyon village library garden bridge forest",
	"checkout billing ledger inventory search gateway scheduler timeout deadlock overflow crash leak",
	"alice bruno chiara dmitri eun farah goran hana ivo jules surveyed sketched documented",
	"the rugged misty summit estuary was explored and rebuilt by farah before the sunlit plateau",
	"Ticket ABC-1070 the inventory service hit a crash after deploy v2.0.0 error code E021 Owner jules",
}

// store is one backend under test with its client.
type store struct {
	name string
	c    *postgram.Client
}

func TestParity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	docs := corpus()
	if len(docs) < 200 || len(queries) < 40 {
		t.Fatalf("corpus of %d documents and %d queries; want ≥ 200 and ≥ 40", len(docs), len(queries))
	}
	emb := postgramtest.NewEmbedder(dims)
	clock := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Second); return clock }

	// SQLite: written through the library, as any user writes.
	lite, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "parity.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	if err := lite.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	lc, err := postgram.New(ctx, postgram.Config{Store: lite, Embedder: emb, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	content := map[uuid.UUID]string{}
	for _, d := range docs {
		e, err := lc.Store(ctx, postgram.StoreInput{Type: d.Type, Content: d.Content, Tags: d.Tags})
		if err != nil {
			t.Fatal(err)
		}
		content[e.ID] = d.Content
	}
	if _, err := postgramtest.Admin(t, lc).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}

	// PostgreSQL: the same rows (ids, chunk ids, timestamps, so that ties
	// break alike), moved without embeddings; PostgreSQL computes its own
	// keyword index and its worker embeds every chunk.
	pgs, err := postgres.Open(ctx, postgres.Config{URL: pgtest.Schema(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer pgs.Close()
	if err := pgs.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := transfer.Export(ctx, adminFor(t, lite), &buf, transfer.ExportOptions{NoEmbeddings: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.Import(ctx, adminFor(t, pgs), &buf, transfer.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	pc, err := postgram.New(ctx, postgram.Config{Store: pgs, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := postgramtest.Admin(t, pc).EnrichPending(ctx); err != nil || st.Entities != len(docs) {
		t.Fatalf("enrich on postgres: %+v %v", st, err)
	}
	if _, err := pgs.Pool().Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	stores := []store{{"sqlite", lc}, {"postgres", pc}}

	snippet := func(id uuid.UUID) string {
		s := content[id]
		if len(s) > 70 {
			s = s[:70] + "…"
		}
		return s
	}
	orderDiffs, answered := 0, 0
	// The default cosine floor, and a low one that admits many vector-only
	// candidates (so the vector ranking decides more of the top 10).
	for _, ranking := range []postgram.RankingMode{postgram.RankingV2, postgram.RankingSeed} {
		for _, threshold := range []*float64{nil, ptr(0.05)} {
			for _, q := range queries {
				var got [2][]uuid.UUID
				var stats [2]postgram.SearchStats
				for i, s := range stores {
					r, err := s.c.Search(ctx, postgram.SearchRequest{Query: q, Limit: 10, Threshold: threshold, Ranking: ranking})
					if err != nil {
						t.Fatalf("%s: search %q: %v", s.name, q, err)
					}
					if len(r.Degraded) != 0 {
						t.Fatalf("%s: search %q degraded: %+v", s.name, q, r.Degraded)
					}
					for _, x := range r.Results {
						got[i] = append(got[i], x.Entity.ID)
					}
					stats[i] = r.Stats
				}
				// The corpus keeps every keyword pool below the cap, where the
				// pool is the same set by definition on both backends.
				for i, s := range stats {
					if s.KeywordPool >= 200 || s.KeywordProbe == "per_term" {
						t.Errorf("%q on %s: keyword pool %d (%s): the corpus must keep pools under the 200 cap", q, stores[i].name, s.KeywordPool, s.KeywordProbe)
					}
				}
				if stats[0].KeywordPool != stats[1].KeywordPool || !slices.Equal(stats[0].Terms, stats[1].Terms) {
					t.Errorf("%q: keyword pools differ: sqlite %d %q, postgres %d %q", q, stats[0].KeywordPool, stats[0].Terms, stats[1].KeywordPool, stats[1].Terms)
				}
				a, b := setOf(got[0]), setOf(got[1])
				if !mapsEqual(a, b) {
					var d strings.Builder
					fmt.Fprintf(&d, "query %q: top-10 evidence sets differ (sqlite %d, postgres %d results)\n", q, len(got[0]), len(got[1]))
					for _, id := range got[0] {
						if !b[id] {
							fmt.Fprintf(&d, "  - only sqlite   (rank %d): %s  %s\n", slices.Index(got[0], id)+1, id, snippet(id))
						}
					}
					for _, id := range got[1] {
						if !a[id] {
							fmt.Fprintf(&d, "  + only postgres (rank %d): %s  %s\n", slices.Index(got[1], id)+1, id, snippet(id))
						}
					}
					t.Errorf("ranking %s, threshold %v: %s", ranking, deref(threshold), d.String())
					continue
				}
				if !slices.Equal(got[0], got[1]) {
					orderDiffs++
					t.Logf("%s query %q: same set, different order:\n  sqlite   %s\n  postgres %s", ranking, q, short(got[0]), short(got[1]))
				}
				if len(got[0]) > 0 {
					answered++
				}
			}
		}
	}
	if answered < 4*len(queries)*3/4 {
		t.Errorf("only %d of %d searches found anything: the corpus does not exercise ranking", answered, 4*len(queries))
	}
	t.Logf("%d documents, %d queries × 2 thresholds × 2 rankings: %d answered, %d with the same set in a different order", len(docs), len(queries), answered, orderDiffs)
}

func ptr[T any](v T) *T { return &v }

func setOf(ids []uuid.UUID) map[uuid.UUID]bool {
	m := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

func mapsEqual(a, b map[uuid.UUID]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func short(ids []uuid.UUID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()[:8]
	}
	return strings.Join(s, " ")
}

func deref(p *float64) any {
	if p == nil {
		return "default"
	}
	return *p
}

// adminFor is the operator API of st's default workspace.
func adminFor(t testing.TB, st driver.Storage) *postgram.Admin {
	t.Helper()
	c, err := postgram.New(context.Background(), postgram.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return postgramtest.Admin(t, c)
}
