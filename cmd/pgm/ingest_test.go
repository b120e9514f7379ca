package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/ingest/fetch"
	"github.com/postgram-go/postgram/ingest/raw"
	"github.com/postgram-go/postgram/transport/rest"
)

// ingestServer is the real REST server with ingestion over SQLite.
func ingestServer(t *testing.T) *realServer {
	t.Helper()
	return newRealServerWith(t, func(cfg *rest.Config, admin *postgram.Admin) {
		rs, _ := raw.Open("", t.TempDir(), 1<<20)
		svc, err := ingest.New(admin, ingest.Config{Raw: rs, Fetcher: fetch.New(fetch.Config{AllowPrivate: true}), MaxBytes: 1 << 20,
			Poll: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = svc.Run(runCtx) }()
		t.Cleanup(func() { stop(); <-done })
		cfg.Ingest = svc
	})
}

func TestIngestCommands(t *testing.T) {
	t.Parallel()
	s := ingestServer(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "The on-call rota changes every Monday at nine.")
	}))
	defer site.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("# Alpha\n\nThe alpha plan."), 0o600)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("Bravo notes."), 0o600)
	os.WriteFile(filepath.Join(dir, ".hidden"), []byte("secret"), 0o600)

	// A URL and a directory, waited for: three jobs, all done.
	r := s.pgm(t, "ingest", site.URL+"/rota.txt", dir, "--tags", "ops", "--wait", "--json")
	wantOK(t, r)
	var jobs []ingest.Job
	if err := json.Unmarshal([]byte(r.stdout), &jobs); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(jobs) != 3 {
		t.Fatalf("%d jobs, want 3 (the hidden file skipped): %s", len(jobs), r.stdout)
	}
	for _, j := range jobs {
		if j.Status != "done" || j.EntityID == "" {
			t.Fatalf("job: %+v", j)
		}
	}
	if !strings.Contains(r.stderr, "100%") {
		t.Fatalf("no progress on stderr: %q", r.stderr)
	}
	// A failing URL: a non-zero exit naming the job's error.
	r = s.pgm(t, "ingest", site.URL+"/gone", "--wait")
	if r.code == 0 || !strings.Contains(r.stderr, "404") {
		t.Fatalf("failed job: code %d, stderr %q", r.code, r.stderr)
	}
	// pgm jobs lists them; show, retry and cancel act on one.
	r = s.pgm(t, "jobs", "--status", "failed")
	wantOK(t, r)
	if !strings.Contains(r.stdout, "failed") || !strings.Contains(r.stdout, "/gone") {
		t.Fatalf("jobs: %s", r.stdout)
	}
	r = s.pgm(t, "jobs", "show", jobs[0].ID, "--json")
	wantOK(t, r)
	if m := jsonMap(t, r.stdout); m["id"] != jobs[0].ID {
		t.Fatalf("jobs show: %v", m)
	}
	if r = s.pgm(t, "jobs", "retry", jobs[0].ID); r.code == 0 || !strings.Contains(r.stderr, "only a failed or cancelled") {
		t.Fatalf("retry of a done job: %d %q", r.code, r.stderr)
	}
	if r = s.pgm(t, "jobs", "frob", jobs[0].ID); r.code == 0 {
		t.Fatal("an unknown jobs command succeeded")
	}
	// pgm watch from the start prints the events, one JSON object a line.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r = runPGMContext(t, ctx, map[string]string{"PGM_API_URL": s.url, "PGM_API_KEY": s.key, "HOME": t.TempDir()}, "",
		"watch", "--after", "0", "--kinds", "entity.created", "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("watch printed %d created events, want 3:\n%s\n%s", len(lines), r.stdout, r.stderr)
	}
	for _, l := range lines {
		if m := jsonMap(t, l); m["kind"] != "entity.created" || m["seq"] == nil {
			t.Fatalf("event line: %s", l)
		}
	}
	if r = s.pgm(t, "ingest", filepath.Join(dir, "missing.pdf")); r.code == 0 || !strings.Contains(r.stderr, "not a URL") {
		t.Fatalf("missing file: %d %q", r.code, r.stderr)
	}
}
