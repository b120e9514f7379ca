package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/transport/rest"
)

func TestQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.store(e.admin, map[string]any{"type": "memory", "content": "embedded fine"})
	e.enrich()
	failing := e.store(e.admin, map[string]any{"type": "document", "content": "this one fails"})
	e.store(e.admin, map[string]any{"type": "document", "content": "so does this one"})
	e.emb.Fail(fmt.Errorf("provider exploded: %w", postgram.ErrEmbeddingFailed))
	if _, err := postgramtest.Admin(t, e.client).EnrichPending(context.Background()); err != nil {
		t.Fatalf("enrich: %v", err)
	}

	// Without include_failures: counts only, and no failures field.
	r := e.do("GET", "/api/queue", e.admin, nil).want(http.StatusOK)
	m := r.object()
	if _, ok := m["failures"]; ok {
		t.Errorf("failures without include_failures: %s", r.Body)
	}
	if _, ok := m["extraction"]; !ok {
		t.Errorf("extraction key missing: %s", r.Body)
	}
	emb := m["embedding"].(map[string]any)
	for _, k := range []string{"pending", "completed", "failed", "retry_eligible", "oldest_pending_secs"} {
		if _, ok := emb[k]; !ok {
			t.Errorf("embedding lacks %q: %s", k, r.Body)
		}
	}
	if emb["completed"] != float64(1) || emb["failed"] != float64(2) {
		t.Errorf("embedding counts: %v", emb)
	}

	// With failures, limited.
	var q struct {
		Embedding driver.EmbeddingQueue `json:"embedding"`
		Failures  []map[string]any      `json:"failures"`
	}
	e.do("GET", "/api/queue?include_failures=true&failure_limit=1", e.admin, nil).want(http.StatusOK).decode(&q)
	if len(q.Failures) != 1 {
		t.Fatalf("failures: %v", q.Failures)
	}
	f := q.Failures[0]
	for _, k := range []string{"id", "type", "kind", "error", "updated_at"} {
		if _, ok := f[k]; !ok {
			t.Errorf("failure lacks %q: %v", k, f)
		}
	}
	if f["kind"] != "embedding" || !strings.Contains(f["error"].(string), "provider exploded") {
		t.Errorf("failure %v", f)
	}
	e.do("GET", "/api/queue?include_failures=1", e.admin, nil).want(http.StatusOK).decode(&q)
	if len(q.Failures) != 2 {
		t.Errorf("default failure_limit: %d failures", len(q.Failures))
	}
	ids := map[any]bool{}
	for _, f := range q.Failures {
		ids[f["id"]] = true
	}
	if !ids[failing.ID.String()] {
		t.Errorf("failures %v lack %s", q.Failures, failing.ID)
	}

	// Bad parameters name themselves.
	// The range is the library's (one check for REST, MCP and the CLI).
	e.do("GET", "/api/queue?include_failures=true&failure_limit=101", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "failure_limit", "between 0 and 100")
	e.do("GET", "/api/queue?failure_limit=-1", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "failure_limit", "")
	e.do("GET", "/api/queue?failure_limit=ten", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "failure_limit", "integer")
	e.do("GET", "/api/queue?include_failures=maybe", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "include_failures", "true or false")
	e.do("GET", "/api/queue?verbose=1", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "verbose", "unknown query parameter")
}

func TestQueueEmptyFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("GET", "/api/queue?include_failures=true", e.admin, nil).want(http.StatusOK)
	if !strings.Contains(string(r.Body), `"failures":[]`) {
		t.Errorf("include_failures with none: %s", r.Body)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Open: no Authorization needed. Before any embedding call the
	// provider state is unknown, which is not degraded.
	r := e.do("GET", "/health", "", nil).want(http.StatusOK)
	h := r.object()
	if h["status"] != "ok" || h["version"] != "test-1" {
		t.Errorf("health %s", r.Body)
	}
	st := h["store"].(map[string]any)
	if st["name"] != "postgres" || st["state"] != "ok" || len(st) != 2 {
		t.Errorf("store %v", st)
	}
	emb := h["embedding"].(map[string]any)
	if emb["model"] != "test/deterministic-v1" || emb["state"] != "unknown" {
		t.Errorf("embedding %v", emb)
	}
	e.store(e.admin, map[string]any{"type": "memory", "content": "x"})
	e.enrich()
	h = e.do("GET", "/health", "", nil).want(http.StatusOK).object()
	if h["status"] != "ok" || h["embedding"].(map[string]any)["state"] != "ok" {
		t.Errorf("after a good embedding call: %v", h)
	}
	e.do("POST", "/health", "", nil).wantError(http.StatusMethodNotAllowed, apierror.MethodNotAllowed, "", "")
	if r := e.do("HEAD", "/health", "", nil).want(http.StatusOK); len(r.Body) != 0 {
		t.Errorf("HEAD /health has a body: %q", r.Body)
	}

	// No embedder: degraded, still 200.
	noEmb, err := postgram.New(context.Background(), postgram.Config{Store: e.pg})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	rest.New(rest.Config{Client: noEmb}).ServeHTTP(rec, httptest.NewRequest("GET", "/health", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("no embedder: status %d %s", rec.Code, rec.Body)
	}
	var nh map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &nh); err != nil {
		t.Fatal(err)
	}
	if nh["status"] != "degraded" || nh["embedding"].(map[string]any)["state"] != "disabled" || nh["version"] != "dev" {
		t.Errorf("no embedder: %v", nh)
	}
}

func TestHealthUnavailable(t *testing.T) {
	t.Parallel()
	// A store whose database cannot be reached (nothing listens on port 1).
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	client, err := postgram.New(context.Background(), postgram.Config{Store: postgres.New(pool, postgres.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(rest.New(rest.Config{Client: client}))
	t.Cleanup(hs.Close)
	e := &env{t: t, http: hs}
	r := e.do("GET", "/health", "", nil).want(http.StatusServiceUnavailable)
	h := r.object()
	if h["status"] != "unavailable" || h["store"].(map[string]any)["state"] != "unavailable" {
		t.Errorf("health: %s", r.Body)
	}
	if strings.Contains(string(r.Body), "ping") || strings.Contains(string(r.Body), "error") {
		t.Errorf("open health endpoint leaks the store error: %s", r.Body)
	}
	// API calls get the UNAVAILABLE envelope, not INTERNAL.
	e.do("GET", "/api/entities", "pgm-"+strings.Repeat("x", 43), nil).wantError(http.StatusServiceUnavailable, apierror.Unavailable, "", "")
}

// TestHealthReadOnly: a store whose writes fail because the database is
// read-only (sessions with default_transaction_read_only, as on a standby)
// is reported read_only and degraded with 200, and a write gets 503
// UNAVAILABLE saying why, without PostgreSQL's own message.
func TestHealthReadOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dsn := e.pg.Pool().Config().ConnString()
	ro, err := postgres.Open(context.Background(), postgres.Config{URL: dsn + "&options=-c%20default_transaction_read_only%3Don"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	client, err := postgram.New(context.Background(), postgram.Config{Store: ro})
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := postgramtest.Admin(t, e.client).CreateKey(context.Background(), postgram.KeySpec{Name: "w", Scopes: postgram.AllScopes})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(rest.New(rest.Config{Client: client}))
	t.Cleanup(hs.Close)
	re := &env{t: t, http: hs}
	h := re.do("GET", "/health", "", nil).want(http.StatusOK).object()
	if h["status"] != "degraded" || h["store"].(map[string]any)["state"] != "read_only" {
		t.Errorf("health of a read-only store: %v", h)
	}
	body := re.do("POST", "/api/entities", token, map[string]any{"type": "memory", "content": "x"}).
		wantError(http.StatusServiceUnavailable, apierror.Unavailable, "", "read-only")
	if strings.Contains(body.Message, "ERROR") || strings.Contains(body.Message, "postgres:") {
		t.Errorf("the client sees backend text: %q", body.Message)
	}
}
