package postgres_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/storagetest"
)

// TestMemoryIndexEntityCache: a search's reads of entities (GetEntities
// under Refresh) come from the in-memory index's cache once read, yet
// every change of an entity, by this process or another one, in any
// column a read returns, is seen by the next search's read; a caller
// modifying what it got changes nothing for the next one; another
// workspace's read never sees the cached row.
func TestMemoryIndexEntityCache(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sql := memPair(t)
	emb := postgramtest.NewEmbedder(storagetest.Dims)
	cm, err := postgram.New(ctx, postgram.Config{Store: mem, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := postgram.New(ctx, postgram.Config{Store: sql, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	ws := postgram.DefaultWorkspace
	const original = "the okapi lives in the rainforest"
	e, err := cs.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: original,
		Tags: []string{"animal"}, Metadata: map[string]any{"habitat": map[string]any{"zone": "tropical"}, "seen": []any{"2024"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.WarmMemoryIndex(ctx, ws); err != nil {
		t.Fatal(err)
	}
	// searchRead reads as a search does; check compares it with the row.
	searchRead := func(what, ws string) []*postgram.Entity {
		t.Helper()
		sctx, err := mem.Refresh(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := mem.GetEntities(sctx, ws, []uuid.UUID{e.ID, e.ID})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return got
	}
	check := func(what string) *postgram.Entity {
		t.Helper()
		got := searchRead(what, ws)
		if len(got) != 1 {
			t.Fatalf("%s: %d entities for one id asked twice", what, len(got))
		}
		want, err := sql.GetEntity(ctx, ws, e.ID)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if diff := cmp.Diff(want, got[0]); diff != "" {
			t.Fatalf("%s: cached entity differs from the row (-row +cached):\n%s", what, diff)
		}
		return got[0]
	}
	first := check("first read")
	if first.EnrichmentStatus != postgram.StagePending {
		t.Fatalf("status %q before enrichment", first.EnrichmentStatus)
	}
	first.Tags[0] = "mutated"
	first.Metadata["habitat"].(map[string]any)["zone"] = "mutated"
	first.Metadata["seen"].([]any)[0] = "mutated"
	if again := check("after a caller modified its copy"); again.Tags[0] != "animal" {
		t.Fatalf("tags %v", again.Tags)
	}
	if got := searchRead("another workspace", "elsewhere"); len(got) != 0 {
		t.Fatalf("another workspace's read returned %d entities", len(got))
	}

	// The reads come from the cache: a change PostgreSQL does not log
	// (the trigger disabled by hand) is not seen.
	err = pgx.BeginFunc(ctx, sql.Pool(), func(tx pgx.Tx) error {
		for _, q := range []string{"ALTER TABLE entities DISABLE TRIGGER postgram_entities_search_update",
			"UPDATE entities SET content = 'unlogged' WHERE id = '" + e.ID.String() + "'",
			"ALTER TABLE entities ENABLE TRIGGER postgram_entities_search_update"} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := searchRead("after an unlogged change", ws); len(got) != 1 || got[0].Content != original {
		t.Fatalf("after an unlogged change: %+v, want the cached row", got)
	}
	// Reads outside a search go to PostgreSQL.
	if got, err := mem.GetEntities(ctx, ws, []uuid.UUID{e.ID}); err != nil || len(got) != 1 || got[0].Content != "unlogged" {
		t.Fatalf("a read outside a search: %+v, %v", got, err)
	}

	// The worker's status columns (kind 3: only the cache follows them).
	if _, err := postgramtest.Admin(t, cs).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	if got := check("after enrichment by the other process"); got.EnrichmentStatus != postgram.StageCompleted {
		t.Fatalf("status %q after enrichment", got.EnrichmentStatus)
	}
	if _, err := sql.Pool().Exec(ctx, "UPDATE entities SET extraction_error = 'provider down' WHERE id = $1", e.ID); err != nil {
		t.Fatal(err)
	}
	if got := check("after a status column changed"); got.ExtractionError != "provider down" {
		t.Fatalf("extraction error %q", got.ExtractionError)
	}
	// Content and version through the other process, then tags through
	// this one.
	c := "the quokka lives on an island"
	if _, err := cs.Update(ctx, e.ID, postgram.UpdateInput{Version: 1, Content: &c}); err != nil {
		t.Fatal(err)
	}
	if got := check("after an edit by the other process"); got.Content != c || got.Version != 2 {
		t.Fatalf("content %q version %d", got.Content, got.Version)
	}
	if _, err := cm.Update(ctx, e.ID, postgram.UpdateInput{Version: 2, Tags: &[]string{"island"}}); err != nil {
		t.Fatal(err)
	}
	if got := check("after an edit by this process"); got.Tags[0] != "island" {
		t.Fatalf("tags %v", got.Tags)
	}
	if _, err := cs.Delete(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	if got := check("after archiving"); got.Status != postgram.StatusArchived {
		t.Fatalf("status %q", got.Status)
	}
	if _, err := postgramtest.Admin(t, cs).Purge(ctx, postgram.PurgeRequest{IDs: []uuid.UUID{e.ID}}); err != nil {
		t.Fatal(err)
	}
	if got := searchRead("after purge", ws); len(got) != 0 {
		t.Fatalf("after purge: %d entities", len(got))
	}
}
