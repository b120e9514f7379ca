package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/transport/rest"
)

// realServer is the real REST server over an embedded SQLite store, for
// the commands of tasks, memory and sync.
type realServer struct {
	url    string
	key    string
	client *postgram.Client
}

func newRealServer(t *testing.T) *realServer { return newRealServerWith(t, nil) }

// newRealServerWith is newRealServer with mod completing the REST
// configuration (e.g. an ingest service over the admin).
func newRealServerWith(t *testing.T, mod func(cfg *rest.Config, admin *postgram.Admin)) *realServer {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "p.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	admin := postgramtest.Admin(t, c)
	key, _, err := admin.CreateKey(ctx, postgram.KeySpec{Name: "cli", Scopes: postgram.AllScopes, ClientID: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.Config{Client: c}
	if mod != nil {
		mod(&cfg, admin)
	}
	srv := rest.New(cfg)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.CloseStreams(); hs.Close() })
	return &realServer{url: hs.URL, key: key, client: c}
}

func (s *realServer) pgm(t *testing.T, args ...string) result {
	t.Helper()
	return runPGM(t, map[string]string{"PGM_API_URL": s.url, "PGM_API_KEY": s.key, "HOME": t.TempDir()}, "", args...)
}

func jsonMap(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, s)
	}
	return m
}

func TestTaskCommands(t *testing.T) {
	t.Parallel()
	s := newRealServer(t)
	r := s.pgm(t, "--json", "task", "add", "set up monitoring", "--context", "@focus-work", "--status", "next", "--due", "2026-12-01")
	wantOK(t, r)
	added := jsonMap(t, r.stdout)
	id := added["id"].(string)
	if added["status"] != "next" || added["type"] != "task" {
		t.Fatalf("added %v", added)
	}
	wantOK(t, s.pgm(t, "task", "add", "call Bob", "--context", "@phone"))

	r = s.pgm(t, "task", "list", "--status", "next")
	wantOK(t, r)
	if !strings.Contains(r.stdout, "set up monitoring") || strings.Contains(r.stdout, "call Bob") || !strings.Contains(r.stdout, "2026-12-01") {
		t.Fatalf("task list --status next:\n%s", r.stdout)
	}
	r = s.pgm(t, "--json", "task", "list", "--context", "@phone")
	wantOK(t, r)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 || rows[0]["context"] != "@phone" {
		t.Fatalf("task list --context: %v %s", err, r.stdout)
	}

	wantOK(t, s.pgm(t, "task", "update", id, "--status", "waiting", "--version", "1"))
	r = s.pgm(t, "task", "complete", id, "--version", "1")
	if r.code != 7 || !strings.Contains(r.stderr, "version") {
		t.Fatalf("stale complete: exit %d, stderr %s", r.code, r.stderr)
	}
	r = s.pgm(t, "task", "complete", id, "--version", "2")
	wantOK(t, r)
	if !strings.Contains(r.stdout, "Completed task "+id) {
		t.Fatalf("complete: %s", r.stdout)
	}
	r = s.pgm(t, "task", "add", "x", "--due", "someday")
	if r.code != 2 || !strings.Contains(r.stderr, "due_date") {
		t.Fatalf("bad due: exit %d, stderr %s", r.code, r.stderr)
	}
}

func TestMemoryCommands(t *testing.T) {
	t.Parallel()
	s := newRealServer(t)
	r := s.pgm(t, "--json", "memory", "session-context", "halfway through the importer refactor", "--topic", "importer", "--session-id", "s42", "--tags", "wip")
	wantOK(t, r)
	id := jsonMap(t, r.stdout)["id"].(string)
	r = s.pgm(t, "--json", "list", "--memory-role", "session_context")
	wantOK(t, r)
	if !strings.Contains(r.stdout, id) {
		t.Fatalf("list --memory-role session_context: %s", r.stdout)
	}
	r = s.pgm(t, "memory", "groom", "--older-than", "0d")
	if r.code != 2 || !strings.Contains(r.stderr, "--yes") {
		t.Fatalf("groom without --yes: exit %d %s", r.code, r.stderr)
	}
	r = s.pgm(t, "memory", "groom", "--dry-run", "--older-than", "0d", "--topic", "importer", "--tag", "wip")
	wantOK(t, r)
	if !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "Would archive 1 of 1") {
		t.Fatalf("groom --dry-run: %s", r.stdout)
	}
	r = s.pgm(t, "memory", "groom", "--older-than", "7x", "--dry-run")
	if r.code != 2 || !strings.Contains(r.stderr, "older_than") {
		t.Fatalf("groom --older-than 7x: exit %d %s", r.code, r.stderr)
	}
	r = s.pgm(t, "memory", "groom", "--older-than", "0d", "--yes")
	wantOK(t, r)
	if !strings.Contains(r.stdout, "Archived 1 of 1") {
		t.Fatalf("groom --yes: %s", r.stdout)
	}
}
