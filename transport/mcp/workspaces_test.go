package mcp_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/ingest/fetch"
	"github.com/postgram-go/postgram/ingest/raw"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/sqlite"
	pmcp "github.com/postgram-go/postgram/transport/mcp"
	"github.com/postgram-go/postgram/workspaces"
)

// TestWorkspacesIsolation: one MCP endpoint serving a store's workspaces
// through a workspaces.Directory; each key's tools act in its own
// workspace: store, search, recall and ingestion never cross.
func TestWorkspacesIsolation(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var st driver.Storage
			if backend == "sqlite" {
				s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "postgram.db")})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				if err := s.Migrate(ctx); err != nil {
					t.Fatal(err)
				}
				st = s
			} else {
				s, err := postgres.Open(ctx, postgres.Config{URL: pgtest.Schema(t), MaxConns: 6})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				if err := s.Migrate(ctx); err != nil {
					t.Fatal(err)
				}
				st = s
			}
			rs, err := raw.Open("", t.TempDir(), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			dir, err := workspaces.Open(ctx, workspaces.Config{
				Client: postgram.Config{Store: st, Embedder: postgramtest.NewEmbedder(32)},
				Ingest: func(admin *postgram.Admin) (*ingest.Service, error) {
					sub, err := raw.Sub(rs, admin.Workspace())
					if err != nil {
						return nil, err
					}
					return ingest.New(admin, ingest.Config{Raw: sub, Fetcher: fetch.New(fetch.Config{AllowPrivate: true}),
						Poll: 50 * time.Millisecond, EmbedWait: 50 * time.Millisecond})
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := dir.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = dir.Stop(sctx)
			})
			logger := slog.New(slog.DiscardHandler)
			srv := pmcp.NewServer(pmcp.Config{Version: "test", Logger: logger,
				IngestFor: func(ctx context.Context, c *postgram.Client) (*ingest.Service, error) {
					w, err := dir.Get(ctx, c.Workspace())
					if err != nil {
						return nil, err
					}
					return w.Ingest, nil
				}})
			ts := httptest.NewServer(pmcp.HTTPHandler(srv, dir, logger))
			t.Cleanup(ts.Close)

			clients := map[string]string{}
			for _, name := range []string{"acme", "bravo"} {
				w, err := dir.Create(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				tok, _, err := w.Admin.CreateKey(ctx, postgram.KeySpec{Name: name, Scopes: postgram.AllScopes})
				if err != nil {
					t.Fatal(err)
				}
				clients[name] = tok
			}
			acme, bravo := connect(t, ts.URL, bearer(clients["acme"])), connect(t, ts.URL, bearer(clients["bravo"]))
			idA := ok(t, acme, "store", map[string]any{"type": "memory", "content": "acme's walrus ledger"})["entity"].(map[string]any)["id"]
			idB := ok(t, bravo, "store", map[string]any{"type": "memory", "content": "bravo's walrus ledger"})["entity"].(map[string]any)["id"]
			for c, want := range map[string]any{"acme": idA, "bravo": idB} {
				cl := acme
				if c == "bravo" {
					cl = bravo
				}
				rows := ok(t, cl, "search", map[string]any{"query": "walrus ledger"})["results"].([]any)
				if len(rows) != 1 || rows[0].(map[string]any)["id"] != want {
					t.Errorf("%s's search: %v, want only %v", c, rows, want)
				}
			}
			fail(t, acme, "recall", map[string]any{"id": idB}, "NOT_FOUND")
			fail(t, bravo, "recall", map[string]any{"id": idA}, "NOT_FOUND")
			fail(t, bravo, "update", map[string]any{"id": idA, "version": 1, "content": "mine"}, "NOT_FOUND")

			job := ok(t, acme, "ingest", map[string]any{"text": "# Narwhal\n\nThe narwhal handbook.", "filename": "n.md", "wait_seconds": 10})
			if job["status"] != "done" {
				t.Fatalf("acme's ingest: %v", job)
			}
			fail(t, bravo, "ingest_status", map[string]any{"id": job["id"]}, "NOT_FOUND")
			fail(t, bravo, "recall", map[string]any{"id": job["entity_id"]}, "NOT_FOUND")
			if got := ok(t, acme, "ingest_status", map[string]any{"id": job["id"]}); got["status"] != "done" {
				t.Errorf("acme's ingest_status: %v", got)
			}
		})
	}
}
