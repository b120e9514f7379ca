package rest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/backup"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/ingest/fetch"
	"github.com/postgram-go/postgram/ingest/raw"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/transport/rest"
	"github.com/postgram-go/postgram/wire"
	"github.com/postgram-go/postgram/workspaces"
)

// newWorkspacesEnv serves every workspace of a fresh store through a
// started workspaces.Directory (ingestion on, each workspace in its own
// part of the raw store), as postgram-server does.
func newWorkspacesEnv(t *testing.T, backend string) (*env, *workspaces.Directory, string) {
	t.Helper()
	ctx := context.Background()
	var st driver.Storage
	switch backend {
	case "sqlite":
		s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "postgram.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		st = s
	default:
		s, err := postgres.Open(ctx, postgres.Config{URL: pgtest.Schema(t), MaxConns: 6})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		st = s
	}
	emb := postgramtest.NewEmbedder(64)
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dataDir := t.TempDir()
	rs, err := raw.Open("", dataDir, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := workspaces.Open(ctx, workspaces.Config{
		Client: postgram.Config{Store: st, Embedder: emb, Logger: logger},
		Ingest: func(admin *postgram.Admin) (*ingest.Service, error) {
			sub, err := raw.Sub(rs, admin.Workspace())
			if err != nil {
				return nil, err
			}
			return ingest.New(admin, ingest.Config{Raw: sub, Fetcher: fetch.New(fetch.Config{AllowPrivate: true}),
				MaxBytes: 64 << 10, Poll: 50 * time.Millisecond, EmbedWait: 50 * time.Millisecond})
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
		if err := dir.Stop(sctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	client := dir.Default().Admin.Client()
	srv := rest.New(rest.Config{Client: client, Logger: logger, Version: "test-1", Workspaces: dir})
	hs := httptest.NewServer(rest.RequestID(rest.AccessLog(logger)(rest.Recover(logger)(srv))))
	t.Cleanup(hs.Close)
	t.Cleanup(srv.CloseStreams)
	e := &env{t: t, client: client, emb: emb, server: srv, http: hs, logs: logs}
	e.admin = e.key(postgram.KeySpec{Name: "admin", Scopes: postgram.AllScopes})
	return e, dir, dataDir
}

// wsKey creates a key with every scope in workspace name.
func wsKey(t *testing.T, dir *workspaces.Directory, name string) string {
	t.Helper()
	w, err := dir.Create(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := w.Admin.CreateKey(context.Background(), postgram.KeySpec{Name: name + "-admin", Scopes: postgram.AllScopes})
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// TestWorkspacesIsolation: one server, two workspaces; each key reads,
// searches, lists, streams, ingests and backs up its own workspace and
// never sees the other's.
func TestWorkspacesIsolation(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e, dir, dataDir := newWorkspacesEnv(t, backend)
			keys := map[string]string{"acme": wsKey(t, dir, "acme"), "bravo": wsKey(t, dir, "bravo")}
			ids := map[string]string{}
			for ws, key := range keys {
				var r wire.EntityResponse
				e.do("POST", "/api/entities", key, map[string]any{"type": "memory", "content": ws + " keeps the walrus ledger"}).
					want(http.StatusCreated).decode(&r)
				ids[ws] = r.Entity.ID.String()
			}
			other := map[string]string{"acme": "bravo", "bravo": "acme"}
			for ws, key := range keys {
				// Read, update and delete across the boundary: not found.
				e.do("GET", "/api/entities/"+ids[other[ws]], key, nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")
				e.do("PATCH", "/api/entities/"+ids[other[ws]], key, map[string]any{"version": 1, "content": "mine now"}).
					wantError(http.StatusNotFound, apierror.NotFound, "", "")
				e.do("DELETE", "/api/entities/"+ids[other[ws]], key, nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")
				// Search and list: only its own.
				var sr wire.SearchResponse
				e.do("POST", "/api/search", key, map[string]any{"query": "walrus ledger"}).want(http.StatusOK).decode(&sr)
				if len(sr.Results) != 1 || sr.Results[0].Entity.ID.String() != ids[ws] {
					t.Errorf("%s searches %+v, want only %s", ws, sr.Results, ids[ws])
				}
				var lr wire.EntityList
				e.do("GET", "/api/entities", key, nil).want(http.StatusOK).decode(&lr)
				if len(lr.Items) != 1 || lr.Items[0].ID.String() != ids[ws] {
					t.Errorf("%s lists %d entities, want only its own", ws, len(lr.Items))
				}
			}
			// The default workspace's key sees neither.
			var sr wire.SearchResponse
			e.do("POST", "/api/search", e.admin, map[string]any{"query": "walrus ledger"}).want(http.StatusOK).decode(&sr)
			if len(sr.Results) != 0 {
				t.Errorf("the default workspace finds %d entities of others", len(sr.Results))
			}

			// Ingestion: acme's job is acme's; bravo cannot see or cancel it.
			var jr wire.JobResponse
			e.do("POST", "/api/ingest", keys["acme"], map[string]any{"text": "# Narwhal\n\nThe narwhal handbook.", "filename": "n.md"}).
				want(http.StatusAccepted).decode(&jr)
			e.do("GET", "/api/jobs/"+jr.Job.ID, keys["bravo"], nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")
			e.do("POST", "/api/jobs/"+jr.Job.ID+"/cancel", keys["bravo"], nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")
			var jl wire.JobList
			e.do("GET", "/api/jobs", keys["bravo"], nil).want(http.StatusOK).decode(&jl)
			if len(jl.Jobs) != 0 {
				t.Errorf("bravo lists %d jobs of acme", len(jl.Jobs))
			}
			job := waitJobAs(t, e, keys["acme"], jr.Job.ID)
			if job.Status != driver.JobDone {
				t.Fatalf("acme's job: %+v", job)
			}
			e.do("GET", "/api/entities/"+job.EntityID, keys["bravo"], nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")

			// Events: each stream carries its own workspace's entities only.
			for ws, key := range keys {
				evs := readEvents(t, e, key, 1)
				for _, ev := range evs {
					if ev.EntityID != "" && ev.EntityID != ids[ws] && ev.EntityID != job.EntityID {
						t.Errorf("%s's stream carries %+v", ws, ev)
					}
					if ws == "bravo" && ev.EntityID == job.EntityID {
						t.Errorf("bravo's stream carries acme's ingested entity")
					}
				}
			}

			// Backup: the key's workspace only.
			r := e.do("GET", "/api/admin/backup", keys["bravo"], nil).want(http.StatusOK)
			br, err := backup.Open(bytes.NewReader(r.Body), nil)
			if err != nil {
				t.Fatal(err)
			}
			m, err := backup.Scan(br)
			if err != nil {
				t.Fatalf("bravo's backup: %v", err)
			}
			if m.Counts[driver.BackupEntities] != 1 || m.Counts[driver.BackupKeys] != 1 {
				t.Errorf("bravo's backup counts %v, want its one entity and one key", m.Counts)
			}

			// A deleted workspace's key is refused at once, its original
			// bytes are gone; the other workspace works.
			acmeRaw := filepath.Join(dataDir, "raw", "workspaces", "acme")
			if n := countFiles(t, acmeRaw); n != 1 {
				t.Fatalf("acme's raw store holds %d files, want the one ingested", n)
			}
			if _, err := dir.Delete(context.Background(), "acme"); err != nil {
				t.Fatal(err)
			}
			if n := countFiles(t, acmeRaw); n != 0 {
				t.Errorf("acme's raw store holds %d files after the delete", n)
			}
			e.do("GET", "/api/entities", keys["acme"], nil).wantError(http.StatusUnauthorized, apierror.Unauthorized, "", "")
			e.do("GET", "/api/entities/"+ids["bravo"], keys["bravo"], nil).want(http.StatusOK)
		})
	}
}

// waitJobAs polls a job with token until it ends.
func waitJobAs(t *testing.T, e *env, token, id string) *ingest.Job {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var r wire.JobResponse
		e.do("GET", "/api/jobs/"+id, token, nil).want(http.StatusOK).decode(&r)
		if r.Job.Status.Final() {
			return r.Job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s", id, r.Job.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readEvents reads the events of token's workspace from the start of the
// log until at least n arrived and the stream has been quiet for 300 ms.
func readEvents(t *testing.T, e *env, token string, n int) []wire.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.http.URL+"/api/events?after=0", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	var out []wire.Event
	deadline := time.After(10 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return out
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var ev wire.Event
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					t.Fatal(err)
				}
				out = append(out, ev)
			}
		case <-time.After(300 * time.Millisecond):
			if len(out) >= n {
				return out
			}
		case <-deadline:
			t.Fatalf("read %d of %d events", len(out), n)
		}
	}
}

// countFiles counts the regular files under root (0 when it is missing).
func countFiles(t *testing.T, root string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
