package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
)

// TestEntityCacheFollowsEveryChange: GetEntities answers repeated reads
// from memory, yet every change of an entity, by this process or another
// one on the same file, in any column, is seen by the next read, and a
// caller modifying what it got changes nothing for the next one.
func TestEntityCacheFollowsEveryChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cache.db")
	emb := postgramtest.NewEmbedder(dims)
	a, b := openAt(t, path), openAt(t, path)
	ca, cb := newClient(t, a, emb), newClient(t, b, emb)
	ws := postgram.DefaultWorkspace

	e, err := ca.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "the okapi lives in the rainforest",
		Tags: []string{"animal"}, Metadata: map[string]any{"habitat": map[string]any{"zone": "tropical"}, "seen": []any{"2024"}}})
	if err != nil {
		t.Fatal(err)
	}
	// read through b and check it against the row (the uncached GetEntity).
	read := func(what string) *postgram.Entity {
		t.Helper()
		got, err := b.GetEntities(ctx, ws, []uuid.UUID{e.ID, e.ID})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(got) != 1 {
			t.Fatalf("%s: %d entities for one id asked twice", what, len(got))
		}
		want, err := b.GetEntity(ctx, ws, e.ID)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if diff := cmp.Diff(want, got[0]); diff != "" {
			t.Fatalf("%s: cached entity differs from the row (-row +cached):\n%s", what, diff)
		}
		return got[0]
	}
	first := read("first read")
	if first.EnrichmentStatus != postgram.StagePending {
		t.Fatalf("status %q before enrichment", first.EnrichmentStatus)
	}
	// A caller scribbling on its copy does not reach the cache.
	first.Tags[0] = "mutated"
	first.Metadata["habitat"].(map[string]any)["zone"] = "mutated"
	first.Metadata["seen"].([]any)[0] = "mutated"
	if again := read("after a caller modified its copy"); again.Tags[0] != "animal" {
		t.Fatalf("tags %v", again.Tags)
	}

	// The worker's status columns (logged for the cache alone).
	if _, err := postgramtest.Admin(t, ca).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	if got := read("after enrichment by the other process"); got.EnrichmentStatus != postgram.StageCompleted {
		t.Fatalf("status %q after enrichment", got.EnrichmentStatus)
	}
	// Content and version through the other process, then tags through
	// this one.
	c := "the quokka lives on an island"
	if _, err := ca.Update(ctx, e.ID, postgram.UpdateInput{Version: 1, Content: &c}); err != nil {
		t.Fatal(err)
	}
	if got := read("after an edit by the other process"); got.Content != c || got.Version != 2 {
		t.Fatalf("content %q version %d", got.Content, got.Version)
	}
	if _, err := cb.Update(ctx, e.ID, postgram.UpdateInput{Version: 2, Tags: &[]string{"island"}}); err != nil {
		t.Fatal(err)
	}
	if got := read("after an edit by this process"); got.Tags[0] != "island" {
		t.Fatalf("tags %v", got.Tags)
	}
	// Archived, then purged by the other process.
	if _, err := ca.Delete(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	if got := read("after archiving"); got.Status != postgram.StatusArchived {
		t.Fatalf("status %q", got.Status)
	}
	if _, err := postgramtest.Admin(t, ca).Purge(ctx, postgram.PurgeRequest{IDs: []uuid.UUID{e.ID}}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.GetEntities(ctx, ws, []uuid.UUID{e.ID}); err != nil || len(got) != 0 {
		t.Fatalf("after purge: %v, %v", got, err)
	}
}
