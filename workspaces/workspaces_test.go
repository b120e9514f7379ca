package workspaces_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/workspaces"
)

// TestOtherProcesses: a started directory opens the workspaces another
// process creates and closes those it deletes, within its refresh.
func TestOtherProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "postgram.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// SQLite has no change feed: a worker finds another process's work at
	// its poll.
	cfg := workspaces.Config{Client: postgram.Config{Store: st, Embedder: postgramtest.NewEmbedder(16),
		Worker: postgram.WorkerConfig{PollInterval: 50 * time.Millisecond}}, Refresh: 20 * time.Millisecond}
	server, err := workspaces.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := server.Stop(sctx); err != nil {
			t.Error(err)
		}
	})
	admin, err := workspaces.Open(ctx, cfg) // pgm-admin, say
	if err != nil {
		t.Fatal(err)
	}
	w, err := admin.Create(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	// Work queued by the other process is done by the server's worker.
	e, err := w.Admin.Client().Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "queued elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return slices.Contains(server.Names(), "acme") }, "the server to open acme")
	waitFor(t, func() bool {
		got, err := w.Admin.Client().Recall(ctx, e.ID)
		return err == nil && got.EnrichmentStatus == postgram.StageCompleted
	}, "the server's worker to embed acme's entity")
	if _, err := admin.Delete(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return !slices.Contains(server.Names(), "acme") }, "the server to close the deleted acme")
	if !slices.Contains(server.Names(), postgram.DefaultWorkspace) {
		t.Errorf("the default workspace was closed: %v", server.Names())
	}
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
