package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/transport/rest"
)

// env is one test's server: its own schema, client, embedder and an
// httptest server running the full middleware chain.
type env struct {
	t      testing.TB
	pg     *postgres.Store // nil on SQLite
	client *postgram.Client
	emb    *postgramtest.Embedder
	server *rest.Server
	http   *httptest.Server
	logs   *syncBuffer
	// admin is a key with every scope and no limits.
	admin string
}

type envOption func(*rest.Config)

func newEnv(t testing.TB, opts ...envOption) *env { return newEnvOn(t, "postgres", opts...) }

// backends are the stores the access tests run on.
var backends = []string{"sqlite", "postgres"}

// newEnvOn builds an env on backend: "sqlite" (a file under t.TempDir;
// e.pg is nil) or "postgres" (a fresh schema).
func newEnvOn(t testing.TB, backend string, opts ...envOption) *env {
	t.Helper()
	ctx := context.Background()
	var st driver.Storage
	var pg *postgres.Store
	switch backend {
	case "sqlite":
		s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "postgram.db")})
		if err != nil {
			t.Fatalf("open store: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		st = s
	default:
		s, err := postgres.Open(ctx, postgres.Config{URL: pgtest.Schema(t), MaxConns: 4})
		if err != nil {
			t.Fatalf("open store: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		st, pg = s, s
	}
	emb := postgramtest.NewEmbedder(64)
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	client, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: emb, Logger: logger})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	cfg := rest.Config{Client: client, Logger: logger, Version: "test-1"}
	for _, o := range opts {
		o(&cfg)
	}
	srv := rest.New(cfg)
	h := rest.RequestID(rest.AccessLog(logger)(rest.Recover(logger)(srv)))
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	e := &env{t: t, pg: pg, client: client, emb: emb, server: srv, http: hs, logs: logs}
	e.admin = e.key(postgram.KeySpec{Name: "admin", Scopes: postgram.AllScopes})
	return e
}

// key creates an API key and returns its plaintext.
func (e *env) key(spec postgram.KeySpec) string {
	e.t.Helper()
	token, _, err := postgramtest.Admin(e.t, e.client).CreateKey(context.Background(), spec)
	if err != nil {
		e.t.Fatalf("create key %q: %v", spec.Name, err)
	}
	return token
}

// response is a received HTTP response with its body read.
type response struct {
	t      testing.TB
	Status int
	Header http.Header
	Body   []byte
}

// do sends a request. body may be nil, a string or []byte (sent as is), or
// anything else (sent as JSON). token "" sends no Authorization header.
func (e *env) do(method, path, token string, body any) *response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, e.http.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.send(req)
}

func (e *env) send(req *http.Request) *response {
	e.t.Helper()
	resp, err := e.http.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return &response{t: e.t, Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// want fails unless the status is status.
func (r *response) want(status int) *response {
	r.t.Helper()
	if r.Status != status {
		r.t.Fatalf("status %d, want %d; body: %s", r.Status, status, r.Body)
	}
	return r
}

// decode unmarshals the body into v.
func (r *response) decode(v any) {
	r.t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		r.t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// object returns the body as a generic JSON object.
func (r *response) object() map[string]any {
	r.t.Helper()
	var m map[string]any
	r.decode(&m)
	return m
}

// wantError checks the envelope: status, code and (when non-empty) the
// field named in details and a substring of the message.
func (r *response) wantError(status int, code apierror.Code, field, msgPart string) apierror.Body {
	r.t.Helper()
	r.want(status)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		r.t.Errorf("error content type %q", ct)
	}
	var env struct {
		Error *apierror.Body `json:"error"`
	}
	r.decode(&env)
	if env.Error == nil {
		r.t.Fatalf("no error envelope: %s", r.Body)
	}
	if env.Error.Code != code {
		r.t.Fatalf("code %s, want %s; body %s", env.Error.Code, code, r.Body)
	}
	if env.Error.Message == "" {
		r.t.Errorf("empty error message: %s", r.Body)
	}
	if field != "" {
		if got, _ := env.Error.Details["field"].(string); got != field {
			r.t.Errorf("details.field %q, want %q; body %s", got, field, r.Body)
		}
	}
	if msgPart != "" && !strings.Contains(env.Error.Message, msgPart) {
		r.t.Errorf("message %q does not mention %q", env.Error.Message, msgPart)
	}
	return *env.Error
}

// store creates an entity through the API and returns it.
func (e *env) store(token string, body map[string]any) postgram.Entity {
	e.t.Helper()
	var out struct{ Entity postgram.Entity }
	e.do("POST", "/api/entities", token, body).want(http.StatusCreated).decode(&out)
	return out.Entity
}

// enrich embeds pending entities synchronously.
func (e *env) enrich() {
	e.t.Helper()
	if _, err := postgramtest.Admin(e.t, e.client).EnrichPending(context.Background()); err != nil {
		e.t.Fatalf("enrich: %v", err)
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines returns the JSON log records.
func (b *syncBuffer) lines(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
