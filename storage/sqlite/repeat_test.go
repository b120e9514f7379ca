package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/storagetest"
)

// TestRepeatedVectorQuery: the same vector queries, asked again through
// one store after each kind of change another store on the file makes
// (storagetest.RepeatedQueryChanges), rank as a store that loads the file
// afresh does: the vector sets' remembered results (vecscan.Set.TopKCached)
// follow every change that can move them.
func TestRepeatedVectorQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "repeat.db")
	emb := postgramtest.NewEmbedder(dims)
	a, b := openAt(t, path), openAt(t, path)
	c := newClient(t, a, emb)
	storagetest.SeedRepeatedQuery(t, c)
	model, _, _, err := a.ActiveModel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := emb.EmbedBatch(ctx, []string{storagetest.RepeatQuery})
	if err != nil {
		t.Fatal(err)
	}
	ws := postgram.DefaultWorkspace
	query := func(f driver.EntityFilter, k int) driver.VectorQuery {
		return driver.VectorQuery{ModelID: model, Vector: vecs[0], Limit: k, Filter: f, Strategy: driver.StrategyExact}
	}
	top := func(f driver.EntityFilter) uuid.UUID {
		t.Helper()
		res, err := a.VectorSearch(ctx, ws, query(f, 1))
		if err != nil || len(res.Hits) == 0 {
			t.Fatalf("top hit: %v", err)
		}
		return res.Hits[0].EntityID
	}
	approx := cmpopts.EquateApprox(0, 1e-9)
	filters := map[string]driver.EntityFilter{"none": {}, "tag": {Tags: []string{storagetest.RepeatTag}}}
	storagetest.RepeatedQueryChanges(t, c, top, func(what string) {
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
	})
}
