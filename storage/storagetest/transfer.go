package storagetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// exportAll collects what ExportWorkspace yields.
func exportAll(t *testing.T, e *env, ws string, modelID int64) ([]*driver.EntityRecord, []postgram.Edge) {
	t.Helper()
	var recs []*driver.EntityRecord
	var edges []postgram.Edge
	err := e.store.ExportWorkspace(e.ctx, ws, modelID, func(r *driver.EntityRecord) error {
		recs = append(recs, r)
		return nil
	}, func(ed *postgram.Edge) error {
		edges = append(edges, *ed)
		return nil
	})
	if err != nil {
		t.Fatalf("ExportWorkspace: %v", err)
	}
	return recs, edges
}

var jsonByValue = cmp.Transformer("json", func(m json.RawMessage) any {
	var v any
	if err := json.Unmarshal(m, &v); err != nil {
		return string(m)
	}
	return v
})

// testTransfer: ExportWorkspace reads every entity (ordered by id, more
// than one page), chunk, embedding and edge of one workspace only; the
// Import methods write them back unchanged into another workspace, where
// keyword and vector search find them at once; existing ids conflict or
// are skipped, never duplicated; an edge to a missing entity is refused.
func testTransfer(t *testing.T, open Opener) {
	e := newEnv(t, open)
	other := e.client(func(c *postgram.Config) { c.Workspace = "elsewhere" })
	mustStore(t, other, postgram.StoreInput{Content: "another workspace's entity"})
	var ids []uuid.UUID
	for i := range 230 { // more than one export page
		ent := e.store1(postgram.StoreInput{Type: postgram.EntityTypes[i%len(postgram.EntityTypes)],
			Content: fmt.Sprintf("transfer entity %d zebra%d", i, i), Tags: []string{fmt.Sprintf("tag%d", i%3)},
			Metadata: map[string]any{"i": float64(i), "deep": map[string]any{"x": []any{"y"}}}})
		ids = append(ids, ent.ID)
	}
	long := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: strings.Repeat("a multi chunk document about transfer ", 120)})
	e.enrich()
	pend := e.store1(postgram.StoreInput{Content: "still pending zebrapending"})
	if _, err := e.c.Delete(e.ctx, ids[7]); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Link(e.ctx, postgram.LinkInput{SourceID: ids[0], TargetID: long.ID, Relation: "cites", Confidence: ptr(0.3)}); err != nil {
		t.Fatal(err)
	}
	modelID, _, _, err := e.store.ActiveModel(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	recs, edges := exportAll(t, e, "default", modelID)
	if len(recs) != len(ids)+2 || len(edges) != 1 {
		t.Fatalf("exported %d entities and %d edges, want %d and 1", len(recs), len(edges), len(ids)+2)
	}
	embedded := 0
	for i, r := range recs {
		if i > 0 && strings.Compare(recs[i-1].Entity.ID.String(), r.Entity.ID.String()) >= 0 {
			t.Fatalf("export not ordered by id at %d", i)
		}
		if r.Entity.Metadata != nil || !json.Valid(r.Metadata) || len(r.Chunks) == 0 {
			t.Fatalf("record %s: metadata %q (map %v), %d chunks", r.Entity.ID, r.Metadata, r.Entity.Metadata, len(r.Chunks))
		}
		for j, c := range r.Chunks {
			if c.Index != j {
				t.Fatalf("record %s: chunk %d has index %d", r.Entity.ID, j, c.Index)
			}
			if c.Embedding != nil {
				if len(c.Embedding) != Dims {
					t.Fatalf("embedding of %d dimensions", len(c.Embedding))
				}
				embedded++
			}
		}
		if r.Entity.ID == long.ID && len(r.Chunks) < 2 {
			t.Fatalf("long document exported with %d chunks", len(r.Chunks))
		}
		if r.Entity.ID == pend.ID && (r.Chunks[0].Embedding != nil || r.Entity.EnrichmentStatus != postgram.StagePending) {
			t.Fatalf("pending entity exported as %s with an embedding", r.Entity.EnrichmentStatus)
		}
	}
	if embedded == 0 {
		t.Fatal("no embeddings exported")
	}
	// Without a model id, no embeddings.
	bare, _ := exportAll(t, e, "default", 0)
	for _, r := range bare {
		for _, c := range r.Chunks {
			if c.Embedding != nil {
				t.Fatal("an embedding exported with model 0")
			}
		}
	}
	// A callback's error stops the export and comes back unchanged.
	stop := errors.New("stop here")
	n := 0
	err = e.store.ExportWorkspace(e.ctx, "default", modelID, func(*driver.EntityRecord) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	}, func(*postgram.Edge) error { return nil })
	if !errors.Is(err, stop) || n != 3 {
		t.Fatalf("callback error: %v after %d", err, n)
	}

	// Import into a fresh workspace, in two batches.
	const ws = "copy"
	half := len(recs) / 2
	for _, part := range [][]*driver.EntityRecord{recs[:half], recs[half:]} {
		got, err := e.store.ImportEntities(e.ctx, ws, modelID, part, false)
		if err != nil || got != len(part) {
			t.Fatalf("ImportEntities: %d, %v", got, err)
		}
	}
	if got, err := e.store.ImportEdges(e.ctx, ws, edges, false); err != nil || got != 1 {
		t.Fatalf("ImportEdges: %d, %v", got, err)
	}
	recs2, edges2 := exportAll(t, e, ws, modelID)
	if d := cmp.Diff(recs, recs2, jsonByValue); d != "" {
		t.Fatalf("entities changed on import (-exported +imported):\n%s", d)
	}
	if d := cmp.Diff(edges, edges2); d != "" {
		t.Fatalf("edges changed on import (-exported +imported):\n%s", d)
	}
	// The copy is searchable at once, by keyword and by vector, and only
	// the pending entity is queued.
	cc := e.client(func(c *postgram.Config) { c.Workspace = ws })
	r := mustSearch(t, cc, postgram.SearchRequest{Query: "zebra12"})
	if len(r.Results) == 0 || r.Results[0].Entity.ID != ids[12] || r.Results[0].Similarity == nil {
		t.Fatalf("search in the imported workspace: %+v", r.Results)
	}
	r = mustSearch(t, cc, postgram.SearchRequest{Query: "zebrapending"})
	if len(r.Results) != 1 || r.Results[0].Entity.ID != pend.ID {
		t.Fatalf("keyword search for the pending entity: %+v", r.Results)
	}
	q, err := cc.QueueStatus(e.ctx, 0)
	if err != nil || q.Embedding.Pending != 1 {
		t.Fatalf("queue after import: %+v %v", q.Embedding, err)
	}
	if st, err := adminOf(t, cc).EnrichPending(e.ctx); err != nil || st.Entities != 1 {
		t.Fatalf("enrich after import: %+v %v", st, err)
	}
	// The source workspace and the third one are untouched.
	if recs3, _ := exportAll(t, e, "elsewhere", modelID); len(recs3) != 1 {
		t.Fatalf("other workspace has %d entities", len(recs3))
	}

	// Existing ids: a conflict naming the id, nothing written; or skipped.
	_, err = e.store.ImportEntities(e.ctx, ws, modelID, recs[:5], false)
	if !errors.Is(err, postgram.ErrConflict) || !strings.Contains(err.Error(), recs[0].Entity.ID.String()) {
		t.Fatalf("re-import: %v", err)
	}
	fresh := *recs[0]
	fresh.Entity.ID = uuid.New()
	fresh.Chunks = append([]driver.ChunkRecord(nil), recs[0].Chunks...)
	for i := range fresh.Chunks {
		fresh.Chunks[i].ID = uuid.New()
	}
	got, err := e.store.ImportEntities(e.ctx, ws, modelID, []*driver.EntityRecord{recs[0], &fresh, recs[1]}, true)
	if err != nil || got != 1 {
		t.Fatalf("skip existing: %d, %v", got, err)
	}
	if _, err := e.store.GetEntity(e.ctx, ws, fresh.Entity.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.ImportEdges(e.ctx, ws, edges, false); !errors.Is(err, postgram.ErrConflict) {
		t.Fatalf("re-import of an edge: %v", err)
	}
	if got, err := e.store.ImportEdges(e.ctx, ws, edges, true); err != nil || got != 0 {
		t.Fatalf("skip existing edge: %d, %v", got, err)
	}
	// Two new edges in one batch that collide with each other (the same
	// ends and relation): the first is inserted, the second is a conflict.
	first, second := edges[0], edges[0]
	first.ID, first.Relation = uuid.New(), "twice"
	second.ID, second.Relation = uuid.New(), "twice"
	if _, err := e.store.ImportEdges(e.ctx, ws, []postgram.Edge{first, second}, false); !errors.Is(err, postgram.ErrConflict) {
		t.Fatalf("two colliding edges in one batch: %v", err)
	}
	if got, err := e.store.ImportEdges(e.ctx, ws, []postgram.Edge{first, second, first}, true); err != nil || got != 1 {
		t.Fatalf("two colliding edges in one batch, skipping: %d, %v", got, err)
	}
	if got, err := e.store.GetEdge(e.ctx, ws, first.ID); err != nil || got.ID != first.ID {
		t.Fatalf("the first of two colliding edges: %v, %v", got, err)
	}
	dangling := edges[0]
	dangling.ID, dangling.TargetID, dangling.Relation = uuid.New(), uuid.New(), "dangles"
	if _, err := e.store.ImportEdges(e.ctx, ws, []postgram.Edge{dangling}, false); !errors.Is(err, postgram.ErrInvalidArgument) {
		t.Fatalf("edge to a missing entity: %v", err)
	}
	if recs4, _ := exportAll(t, e, ws, modelID); len(recs4) != len(recs)+1 {
		t.Fatalf("%d entities in the copy, want %d", len(recs4), len(recs)+1)
	}
}
