package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
)

// TestRepeatedVectorQuery: the same vector queries, asked again through
// one store after each kind of change another store on the file makes (a
// new entity near the query, tags, status and content of entities in the
// results, a delete), rank as a store that loads the file afresh does: the
// vector sets' remembered results (vecscan.Set.TopKCached) follow every
// change that can move them.
func TestRepeatedVectorQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "repeat.db")
	emb := postgramtest.NewEmbedder(dims)
	a, b := openAt(t, path), openAt(t, path)
	c := newClient(t, a, emb)
	admin := postgramtest.Admin(t, c)
	for i := range 60 {
		in := postgram.StoreInput{Type: postgram.TypeMemory, Content: fmt.Sprintf("lighthouse keeper log %d, harbor %d", i, i%7)}
		if i%2 == 0 {
			in.Tags = []string{"coast"}
		}
		if _, err := c.Store(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	model, _, _, err := a.ActiveModel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := emb.EmbedBatch(ctx, []string{"lighthouse keeper log harbor 3"})
	if err != nil {
		t.Fatal(err)
	}
	ws := postgram.DefaultWorkspace
	filters := map[string]driver.EntityFilter{"none": {}, "coast": {Tags: []string{"coast"}}}
	approx := cmpopts.EquateApprox(0, 1e-9)
	query := func(f driver.EntityFilter, k int) driver.VectorQuery {
		return driver.VectorQuery{ModelID: model, Vector: vecs[0], Limit: k, Filter: f, Strategy: driver.StrategyExact}
	}
	check := func(what string) {
		t.Helper()
		fresh := openAt(t, path)
		defer fresh.Close()
		for name, f := range filters {
			want, err := fresh.VectorSearch(ctx, ws, query(f, 8))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the second from memory, if nothing changed in between
				got, err := b.VectorSearch(ctx, ws, query(f, 8))
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want.Hits, got.Hits, approx); d != "" {
					t.Fatalf("%s, filter %s: ranking differs from a fresh load's (-fresh +repeated):\n%s", what, name, d)
				}
			}
		}
	}
	check("after the load")
	top := func(f driver.EntityFilter) *postgram.Entity {
		t.Helper()
		res, err := a.VectorSearch(ctx, ws, query(f, 1))
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
	if _, err := admin.EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a store near the query")
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
	if _, err := admin.EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	check("after the top hit's text changed")
	e = top(driver.EntityFilter{})
	if _, err := c.Delete(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	check("after the top hit was deleted")
}
