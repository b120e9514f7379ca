package rest_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/transport/rest"
)

func TestRequestID(t *testing.T) {
	t.Parallel()
	var seen string
	h := rest.RequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = rest.RequestIDFrom(r.Context())
	}))
	for _, c := range []struct {
		in   string
		keep bool
	}{
		{"abc-123_x.y:z", true},
		{"", false},
		{"has space", false},
		{"evil\r\nheader", false},
		{"<script>", false},
		{strings.Repeat("a", 129), false},
		{strings.Repeat("a", 128), true},
	} {
		req := httptest.NewRequest("GET", "/", nil)
		if c.in != "" {
			req.Header.Set(rest.RequestIDHeader, c.in)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := rec.Header().Get(rest.RequestIDHeader)
		if got == "" || got != seen {
			t.Errorf("%q: header %q, context %q", c.in, got, seen)
		}
		if (got == c.in) != c.keep {
			t.Errorf("%q: kept=%v, want %v (got %q)", c.in, got == c.in, c.keep, got)
		}
	}
	if rest.RequestIDFrom(context.Background()) != "" {
		t.Error("RequestIDFrom on a bare context")
	}
}

func TestAccessLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req, _ := http.NewRequest("GET", e.http.URL+"/api/entities?limit=5&apiKey=secret-in-query", nil)
	req.Header.Set("Authorization", "Bearer "+e.admin)
	req.Header.Set(rest.RequestIDHeader, "req-under-test")
	e.send(req).wantError(http.StatusBadRequest, apierror.Validation, "apiKey", "")
	e.do("GET", "/api/entities", e.admin, nil).want(http.StatusOK)
	e.do("GET", "/api/entities", "", nil).want(http.StatusUnauthorized)

	logs := e.logs.String()
	for _, secret := range []string{e.admin, "secret-in-query", "limit=5", "Bearer"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q", secret)
		}
	}
	var access []map[string]any
	for _, l := range e.logs.lines(t) {
		if l["msg"] == "http request" {
			access = append(access, l)
		}
	}
	if len(access) != 3 {
		t.Fatalf("%d access log lines:\n%s", len(access), logs)
	}
	first := access[0]
	for _, k := range []string{"method", "path", "status", "bytes", "duration_ms", "request_id"} {
		if _, ok := first[k]; !ok {
			t.Errorf("access log lacks %q: %v", k, first)
		}
	}
	if first["method"] != "GET" || first["path"] != "/api/entities" || first["status"] != float64(400) ||
		first["request_id"] != "req-under-test" || first["bytes"].(float64) <= 0 {
		t.Errorf("access log %v", first)
	}
	if first["key_id"] == nil || first["key_id"] == "" {
		t.Errorf("authenticated request logged without key_id: %v", first)
	}
	if _, ok := access[2]["key_id"]; ok {
		t.Errorf("unauthenticated request logged with key_id: %v", access[2])
	}
	if access[2]["status"] != float64(401) {
		t.Errorf("401 logged as %v", access[2]["status"])
	}
}

func TestRecover(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.server.Router().HandleFunc("/boom", func(http.ResponseWriter, *http.Request) { panic("kaboom") })
	r := e.do("GET", "/boom", "", nil)
	r.wantError(http.StatusInternalServerError, apierror.Internal, "", "internal error")
	if strings.Contains(string(r.Body), "kaboom") {
		t.Errorf("panic value leaked: %s", r.Body)
	}
	// The server still serves.
	e.do("GET", "/health", "", nil).want(http.StatusOK)
	var found bool
	for _, l := range e.logs.lines(t) {
		if l["msg"] == "panic serving request" {
			found = true
			if l["panic"] != "kaboom" || !strings.Contains(l["stack"].(string), "goroutine") || l["request_id"] == "" {
				t.Errorf("panic log %v", l)
			}
		}
	}
	if !found {
		t.Errorf("panic not logged:\n%s", e.logs.String())
	}

	// Recover alone (no RequestID or AccessLog around it).
	var buf bytes.Buffer
	h := rest.Recover(slog.New(slog.NewJSONHandler(&buf, nil)))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(errors.New("nil map"))
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/x", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"INTERNAL"`) || !strings.Contains(buf.String(), "nil map") {
		t.Errorf("bare Recover: %d %s / %s", rec.Code, rec.Body, buf.String())
	}
	// A panic after the response started cannot change it, but is logged.
	buf.Reset()
	h = rest.Recover(slog.New(slog.NewJSONHandler(&buf, nil)))(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		panic("late")
	}))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
	if rec.Code != http.StatusAccepted || !strings.Contains(buf.String(), "late") {
		t.Errorf("late panic: %d / %s", rec.Code, buf.String())
	}
}

// stubAuth authenticates one fixed token as a principal of client.
type stubAuth struct {
	client *postgram.Client
	token  string
	p      postgram.Principal
}

func (a stubAuth) Authenticate(_ context.Context, token string) (*postgram.Client, error) {
	if token != a.token {
		return nil, postgram.ErrUnauthorized
	}
	adm, err := a.client.Admin()
	if err != nil {
		return nil, err
	}
	return adm.As(a.p), nil
}

func TestCustomAuthenticator(t *testing.T) {
	t.Parallel()
	base := newEnv(t)
	var seen *postgram.Client
	auth := stubAuth{client: base.client, token: "oauth-token-1", p: postgram.Principal{KeyID: "oauth:1", ClientID: "agent",
		Scopes: []postgram.Scope{postgram.ScopeRead}}}
	srv := rest.New(rest.Config{Client: base.client, Auth: auth})
	srv.Router().Handle("/api/whoami", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = rest.ClientFrom(r.Context())
	}))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/api/entities", nil)
	req.Header.Set("Authorization", "Bearer oauth-token-1")
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("custom auth: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	req = httptest.NewRequest("POST", "/api/entities", strings.NewReader(`{"type":"memory","content":"x"}`))
	req.Header.Set("Authorization", "Bearer oauth-token-1")
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("read-only principal stored: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	req = httptest.NewRequest("GET", "/api/entities", nil)
	req.Header.Set("Authorization", "Bearer "+base.admin)
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("token unknown to the custom authenticator: %d", rec.Code)
	}
	// Routes mounted on Router() outside the authenticated group see no client.
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/api/whoami", nil))
	if seen != nil {
		t.Errorf("ClientFrom outside auth: %v", seen)
	}
	if c := rest.ClientFrom(rest.WithClient(context.Background(), base.client)); c != base.client {
		t.Error("WithClient/ClientFrom round trip")
	}
}
