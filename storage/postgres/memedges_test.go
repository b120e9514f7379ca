package postgres_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/storagetest"
)

// TestMemoryIndexEdgeSummaries: a search's edge summaries come from the
// in-memory index and equal PostgreSQL's, under several filters, after the
// load and after another store links, unlinks, re-links, archives and
// deletes entities.
func TestMemoryIndexEdgeSummaries(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sql := memPair(t)
	cs, err := postgram.New(ctx, postgram.Config{Store: sql, Embedder: postgramtest.NewEmbedder(storagetest.Dims)})
	if err != nil {
		t.Fatal(err)
	}
	ws := postgram.DefaultWorkspace
	var ids []uuid.UUID
	for i, text := range []string{"okapi", "giraffe", "zebra", "lion", "hyena", "unlinked"} {
		tags := []string{"savanna"}
		if i%2 == 1 {
			tags = []string{"forest"}
		}
		e, err := cs.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "the " + text, Tags: tags})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	link := func(a, b int, rel string) *postgram.Edge {
		t.Helper()
		e, err := cs.Link(ctx, postgram.LinkInput{SourceID: ids[a], TargetID: ids[b], Relation: rel})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	link(0, 1, "related_to")
	link(0, 2, "related_to")
	link(3, 0, "eats")
	link(4, 0, "eats")
	link(1, 2, "Neighbour")
	link(2, 1, "neighbour")
	if err := mem.WarmMemoryIndex(ctx, ws); err != nil {
		t.Fatal(err)
	}
	filters := map[string]driver.EntityFilter{
		"none":     {},
		"savanna":  {Tags: []string{"savanna"}},
		"archived": {IncludeArchived: true},
		"task":     {Types: []postgram.EntityType{postgram.TypeTask}},
	}
	check := func(what string) {
		t.Helper()
		for name, f := range filters {
			want, err := sql.EdgeSummaries(ctx, ws, ids, f)
			if err != nil {
				t.Fatal(err)
			}
			sctx, err := mem.Refresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := mem.EdgeSummaries(sctx, ws, append(ids, ids[0]), f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s, filter %s: summaries differ (-PostgreSQL +memory):\n%s", what, name, diff)
			}
			// They were the index's: it answers a search's reads.
			if _, ok := postgres.MemEdgeSummaries(mem, sctx, ws, ids, f); !ok {
				t.Fatalf("%s: the in-memory index did not answer", what)
			}
		}
	}
	check("after the load")
	if st, ok := mem.MemoryIndexStatus(ws); !ok || st.State != "ready" {
		t.Fatalf("memory index %+v, %v", st, ok)
	}
	e := link(5, 0, "related_to")
	link(0, 5, "eats")
	link(0, 1, "related_to") // the same edge again: updated, not added
	check("after links")
	if err := cs.Unlink(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	check("after an unlink")
	cur, err := cs.Recall(ctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	archived := postgram.StatusArchived
	if _, err := cs.Update(ctx, ids[1], postgram.UpdateInput{Version: cur.Version, Status: &archived}); err != nil {
		t.Fatal(err)
	}
	check("after archiving an endpoint")
	if _, err := cs.Delete(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	check("after deleting an endpoint")
}
