package postgres_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/storagetest"
)

// TestMemoryIndexRepeatedQuery: the same vector queries, asked again after
// each kind of change another store makes (a new entity near the query,
// tags, status, visibility and content of entities in the results, a
// delete), rank as PostgreSQL does every time: the vector sets' remembered
// results (vecscan.Set.TopKCached) follow every change that can move them.
func TestMemoryIndexRepeatedQuery(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sql := memPair(t)
	const dims = storagetest.Dims
	c, err := postgram.New(ctx, postgram.Config{Store: sql, Embedder: postgramtest.NewEmbedder(dims)})
	if err != nil {
		t.Fatal(err)
	}
	admin := postgramtest.Admin(t, c)
	var ids []*postgram.Entity
	for i := range 60 {
		in := postgram.StoreInput{Type: postgram.TypeMemory, Content: fmt.Sprintf("lighthouse keeper log %d, harbor %d", i, i%7)}
		if i%2 == 0 {
			in.Tags = []string{"coast"}
		}
		e, err := c.Store(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e)
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
	vecs, err := postgramtest.NewEmbedder(dims).EmbedBatch(ctx, []string{"lighthouse keeper log harbor 3"})
	if err != nil {
		t.Fatal(err)
	}
	filters := map[string]driver.EntityFilter{"none": {}, "coast": {Tags: []string{"coast"}}}
	approx := cmpopts.EquateApprox(0, 1e-6)
	check := func(what string) {
		t.Helper()
		for name, f := range filters {
			q := driver.VectorQuery{ModelID: model, Vector: vecs[0], Limit: 8, Filter: f, Strategy: driver.StrategyExact}
			want, err := sql.VectorSearch(ctx, "default", q)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the second from memory, if nothing changed in between
				got, err := mem.VectorSearch(ctx, "default", q)
				if err != nil {
					t.Fatal(err)
				}
				if got.Plan != "memory" {
					t.Fatalf("%s: plan %q", what, got.Plan)
				}
				if d := cmp.Diff(want.Hits, got.Hits, approx); d != "" {
					t.Fatalf("%s, filter %s: in-memory ranking differs from PostgreSQL's (-postgres +memory):\n%s", what, name, d)
				}
			}
		}
	}
	check("after the load")
	top := func(f driver.EntityFilter) *postgram.Entity {
		t.Helper()
		res, err := sql.VectorSearch(ctx, "default", driver.VectorQuery{ModelID: model, Vector: vecs[0], Limit: 1, Filter: f, Strategy: driver.StrategyExact})
		if err != nil || len(res.Hits) == 0 {
			t.Fatalf("top hit: %v", err)
		}
		e, err := c.Recall(ctx, res.Hits[0].EntityID)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "lighthouse keeper log harbor 3", Tags: []string{"coast"}}); err != nil {
		t.Fatal(err)
	}
	check("after a store, before its vector")
	if _, err := admin.EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	check("after its vector")
	e := top(filters["coast"])
	none := []string{}
	if _, err := c.Update(ctx, e.ID, postgram.UpdateInput{Version: e.Version, Tags: &none}); err != nil {
		t.Fatal(err)
	}
	check("after the top hit lost its tag")
	e = top(driver.EntityFilter{})
	archived := postgram.StatusArchived
	if _, err := c.Update(ctx, e.ID, postgram.UpdateInput{Version: e.Version, Status: &archived}); err != nil {
		t.Fatal(err)
	}
	check("after the top hit was archived")
	e = top(driver.EntityFilter{})
	text := "an unrelated text about quarterly budgets"
	if _, err := c.Update(ctx, e.ID, postgram.UpdateInput{Version: e.Version, Content: &text}); err != nil {
		t.Fatal(err)
	}
	check("after the top hit's text changed, before its vector")
	if _, err := admin.EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	check("after its new vector")
	e = top(driver.EntityFilter{})
	if _, err := c.Delete(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	check("after the top hit was deleted")
	archivedAgain := ids[7]
	cur, err := c.Recall(ctx, archivedAgain.ID)
	if err != nil {
		t.Fatal(err)
	}
	coast := []string{"coast"}
	if _, err := c.Update(ctx, cur.ID, postgram.UpdateInput{Version: cur.Version, Tags: &coast}); err != nil {
		t.Fatal(err)
	}
	check("after an entity gained the tag")
}
