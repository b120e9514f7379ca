package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/storagetest"
)

// TestMemoryIndexKeywords: the copy answers keyword probes, fills and
// lexeme statistics as PostgreSQL does (the same chunks, term masks,
// ranks, features and similarities), after its load and after another
// store's writes (new entities, a rewritten content, a renamed entity's
// head, archive and hard delete), which it sees at once.
func TestMemoryIndexKeywords(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sql := memPair(t)
	emb := postgramtest.NewEmbedder(storagetest.Dims)
	c, err := postgram.New(ctx, postgram.Config{Store: sql, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	admin := postgramtest.Admin(t, c)
	words := strings.Fields("amber basalt cedar delta ember fjord garnet harbor indigo juniper kelp lagoon " +
		"meadow nectar onyx prairie quartz ridge sierra tundra umber valley willow xenon yarrow zephyr")
	var ents []*postgram.Entity
	for i := range 120 {
		text := fmt.Sprintf("%s %s %s note %d. The %s was %s near the %s.", words[i%len(words)], words[(i*7+3)%len(words)],
			words[(i*11+5)%len(words)], i, words[(i*3+1)%len(words)], words[(i*5+2)%len(words)], words[i%len(words)])
		in := postgram.StoreInput{Type: postgram.TypeMemory, Content: text}
		switch i % 4 {
		case 0:
			in.Type, in.Tags = postgram.TypeDocument, []string{"fourth"}
		case 1:
			in.Metadata = map[string]any{"name": words[(i*13+7)%len(words)] + " " + words[(i*17+1)%len(words)]}
		}
		e, err := c.Store(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		ents = append(ents, e)
	}
	if _, err := admin.EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mem.WarmMemoryIndex(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	model, _, _, err := sql.ActiveModel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	compareKeywords(t, mem, sql, model, words)

	// Another store's writes.
	fresh, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "zephyr over the glacier, quartz underfoot"})
	if err != nil {
		t.Fatal(err)
	}
	content := "a rewritten note about the lagoon and the glacier"
	if _, err := c.Update(ctx, ents[2].ID, postgram.UpdateInput{Version: ents[2].Version, Content: &content}); err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{"name": "glacier warden"}
	if _, err := c.Update(ctx, ents[5].ID, postgram.UpdateInput{Version: ents[5].Version, Metadata: meta}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, ents[9].ID); err != nil { // archived
		t.Fatal(err)
	}
	if _, err := sql.PurgeEntities(ctx, "default", []uuid.UUID{ents[10].ID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	hits, err := mem.KeywordProbe(ctx, "default", driver.KeywordQuery{Terms: []string{"glacier"}, Mode: driver.ProbeAll, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, h := range hits {
		found = found || h.EntityID == fresh.ID
	}
	if !found {
		t.Fatalf("a new entity is not found by keyword at once: %+v", hits)
	}
	compareKeywords(t, mem, sql, model, append(words, "glacier", "warden"))
	st, ok := mem.MemoryIndexStatus("default")
	if !ok || st.State != "ready" || st.Chunks == 0 {
		t.Fatalf("the copy is not what answered: %+v", st)
	}
}

// compareKeywords runs probes, fills and statistics on both stores and
// reports any difference. Limits exceed the matches, so both take every
// matching chunk (which ones come first when they do not is the stores'
// own order); hits are compared in chunk id order.
func compareKeywords(t *testing.T, mem, sql *postgres.Store, model int64, words []string) {
	t.Helper()
	ctx := context.Background()
	emb := postgramtest.NewEmbedder(storagetest.Dims)
	approx := cmpopts.EquateApprox(0, 1e-6)
	byChunk := func(h []driver.KeywordHit) []driver.KeywordHit {
		h = slices.Clone(h)
		slices.SortFunc(h, func(a, b driver.KeywordHit) int { return strings.Compare(a.ChunkID.String(), b.ChunkID.String()) })
		return h
	}
	queries := [][]string{{"warden"}, {"amber"}, {"cedar", "harbor"}, {"note 17"}, {"glacier", "lagoon", "quartz"}, {"ember", "absent"}}
	filters := []driver.EntityFilter{{}, {Tags: []string{"fourth"}}, {Types: []driver.EntityType{driver.TypeMemory}}, {IncludeArchived: true}}
	for qi, terms := range queries {
		vecs, err := emb.EmbedBatch(ctx, []string{strings.Join(terms, " ")})
		if err != nil {
			t.Fatal(err)
		}
		f := filters[qi%len(filters)]
		for _, mode := range []driver.ProbeMode{driver.ProbeAll, driver.ProbeAny, driver.ProbeTerm} {
			q := driver.KeywordQuery{Terms: terms, Mode: mode, Limit: 500, Filter: f, Vector: vecs[0], ModelID: model, Features: qi%2 == 0}
			want, err := sql.KeywordProbe(ctx, "default", q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := mem.KeywordProbe(ctx, "default", q)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(byChunk(want), byChunk(got), approx, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("probe %q mode %d (-postgres +memory):\n%s", terms, mode, d)
			}
		}
		order := make([]int, len(terms))
		for i := range order {
			order[i] = len(terms) - 1 - i
		}
		fq := driver.KeywordFillQuery{Terms: terms, Order: order, Limit: 500, Filter: f, Features: true, Heads: 5, HeadTerms: order}
		want, err := sql.KeywordFill(ctx, "default", fq)
		if err != nil {
			t.Fatal(err)
		}
		got, err := mem.KeywordFill(ctx, "default", fq)
		if err != nil {
			t.Fatal(err)
		}
		if want.Conjunction != got.Conjunction {
			t.Errorf("fill %q: conjunction %d in PostgreSQL, %d in memory", terms, want.Conjunction, got.Conjunction)
		}
		if d := cmp.Diff(byChunk(want.Hits), byChunk(got.Hits), approx, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("fill %q (-postgres +memory):\n%s", terms, d)
		}
	}
	lexemes := append(slices.Clone(words), "note", "absent", "")
	want, err := sql.LexemeStats(ctx, "default", lexemes)
	if err != nil {
		t.Fatal(err)
	}
	got, err := mem.LexemeStats(ctx, "default", lexemes)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("lexeme stats (-postgres +memory):\n%s", d)
	}
}
