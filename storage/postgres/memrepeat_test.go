package postgres_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/storagetest"
)

// TestMemoryIndexRepeatedQuery: the same vector queries, asked again after
// each kind of change another store makes (storagetest.RepeatedQueryChanges),
// rank as PostgreSQL does every time: the vector sets' remembered results
// (vecscan.Set.TopKCached) follow every change that can move them.
func TestMemoryIndexRepeatedQuery(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sql := memPair(t)
	emb := postgramtest.NewEmbedder(storagetest.Dims)
	c, err := postgram.New(ctx, postgram.Config{Store: sql, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	storagetest.SeedRepeatedQuery(t, c)
	if err := mem.WarmMemoryIndex(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	model, _, _, err := sql.ActiveModel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := emb.EmbedBatch(ctx, []string{storagetest.RepeatQuery})
	if err != nil {
		t.Fatal(err)
	}
	query := func(f driver.EntityFilter, k int) driver.VectorQuery {
		return driver.VectorQuery{ModelID: model, Vector: vecs[0], Limit: k, Filter: f, Strategy: driver.StrategyExact}
	}
	top := func(f driver.EntityFilter) uuid.UUID {
		t.Helper()
		res, err := sql.VectorSearch(ctx, "default", query(f, 1))
		if err != nil || len(res.Hits) == 0 {
			t.Fatalf("top hit: %v", err)
		}
		return res.Hits[0].EntityID
	}
	approx := cmpopts.EquateApprox(0, 1e-6)
	filters := map[string]driver.EntityFilter{"none": {}, "tag": {Tags: []string{storagetest.RepeatTag}}}
	storagetest.RepeatedQueryChanges(t, c, top, func(what string) {
		t.Helper()
		for name, f := range filters {
			want, err := sql.VectorSearch(ctx, "default", query(f, 8))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the second from memory, if nothing changed in between
				got, err := mem.VectorSearch(ctx, "default", query(f, 8))
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
	})
}
