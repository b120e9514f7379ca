package mcp_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/ingest/fetch"
	"github.com/postgram-go/postgram/ingest/raw"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/sqlite"
	pmcp "github.com/postgram-go/postgram/transport/mcp"
)

func TestIngestTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "postgram.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: postgramtest.NewEmbedder(32)})
	if err != nil {
		t.Fatal(err)
	}
	admin := postgramtest.Admin(t, c)
	rs, _ := raw.Open("", t.TempDir(), 1<<20)
	svc, err := ingest.New(admin, ingest.Config{Raw: rs, Fetcher: fetch.New(fetch.Config{AllowPrivate: true}),
		Poll: 50 * time.Millisecond, EmbedWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	logger := slog.New(slog.DiscardHandler)
	srv := pmcp.NewServer(pmcp.Config{Client: c, Version: "test", Logger: logger, Ingest: svc})
	ts := httptest.NewServer(pmcp.HTTPHandler(srv, admin, logger))
	t.Cleanup(ts.Close)
	tok, _, err := admin.CreateKey(ctx, postgram.KeySpec{Name: "agent", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})
	if err != nil {
		t.Fatal(err)
	}
	cl := connect(t, ts.URL, bearer(tok))
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/markdown")
		fmt.Fprint(w, "# Onboarding\n\nAsk Dana for access to the staging cluster.\n")
	}))
	defer site.Close()

	res, sc := call(t, cl, "ingest", map[string]any{"url": site.URL + "/onboarding.md", "tags": "howto", "wait_seconds": "10"})
	if res.IsError || sc["status"] != "done" || sc["entity_id"] == nil || sc["title"] != "Onboarding" {
		t.Fatalf("ingest: %v", sc)
	}
	_, st2 := call(t, cl, "ingest_status", map[string]any{"id": sc["id"]})
	if st2["status"] != "done" || st2["entity_id"] != sc["entity_id"] {
		t.Fatalf("ingest_status: %v", st2)
	}
	// Text, the full shape, and bad input.
	_, full := call(t, cl, "ingest", map[string]any{"text": "plain words", "full_response": true})
	if job, ok := full["job"].(map[string]any); !ok || job["status"] != "queued" {
		t.Fatalf("full response: %v", full)
	}
	res, bad := call(t, cl, "ingest", map[string]any{"url": "ftp://x.example"})
	if !res.IsError || bad["error"].(map[string]any)["code"] != "VALIDATION" {
		t.Fatalf("bad url: %v", bad)
	}
	res, nf := call(t, cl, "ingest_status", map[string]any{"id": "01a2401e-706f-7bcf-a43a-d26ee4b2247c"})
	if !res.IsError || nf["error"].(map[string]any)["code"] != "NOT_FOUND" {
		t.Fatalf("unknown job: %v", nf)
	}
}
