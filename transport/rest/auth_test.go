package rest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/transport/apierror"
)

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name, header, msg string
	}{
		{"missing", "", "missing Authorization header"},
		{"basic", "Basic dXNlcjpwYXNz", "unsupported Authorization scheme \"Basic\""},
		{"no token", "Bearer", "no bearer token"},
		{"blank token", "Bearer    ", "no bearer token"},
		{"spaces in token", "Bearer pgm-abc def", "whitespace"},
		{"malformed key", "Bearer not-a-key", "malformed API key"},
		{"unknown key", "Bearer pgm-" + strings.Repeat("A", 43), "unknown API key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", e.http.URL+"/api/entities", nil)
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			r := e.send(req)
			r.wantError(http.StatusUnauthorized, apierror.Unauthorized, "", c.msg)
			if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
			}
		})
	}
	// The scheme is case-insensitive.
	req, _ := http.NewRequest("GET", e.http.URL+"/api/entities", nil)
	req.Header.Set("Authorization", "bearer "+e.admin)
	e.send(req).want(http.StatusOK)

	// Every /api route needs a key, even the document; /health does not.
	for _, path := range []string{"/api/openapi.json", "/api/queue", "/api/entities/" + uuid.NewString()} {
		e.do("GET", path, "", nil).wantError(http.StatusUnauthorized, apierror.Unauthorized, "", "")
	}
	e.do("POST", "/api/search", "", map[string]any{"query": "x"}).wantError(http.StatusUnauthorized, apierror.Unauthorized, "", "")
	e.do("GET", "/health", "", nil).want(http.StatusOK)

	// A revoked key is refused on its next request.
	token, k, err := postgramtest.Admin(t, e.client).CreateKey(context.Background(), postgram.KeySpec{Name: "soon-revoked"})
	if err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/api/entities", token, nil).want(http.StatusOK)
	if err := postgramtest.Admin(t, e.client).RevokeKey(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/api/entities", token, nil).wantError(http.StatusUnauthorized, apierror.Unauthorized, "", "revoked")
}

func TestForbidden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ent := e.store(e.admin, map[string]any{"type": "memory", "content": "read me"})
	reader := e.key(postgram.KeySpec{Name: "reader", Scopes: []postgram.Scope{postgram.ScopeRead}})
	writer := e.key(postgram.KeySpec{Name: "writer", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})
	path := "/api/entities/" + ent.ID.String()

	e.do("GET", path, reader, nil).want(http.StatusOK)
	e.do("POST", "/api/entities", reader, map[string]any{"type": "memory", "content": "x"}).wantError(http.StatusForbidden, apierror.Forbidden, "", "write")
	e.do("PATCH", path, reader, map[string]any{"version": 1, "content": "y"}).wantError(http.StatusForbidden, apierror.Forbidden, "", "write")
	e.do("DELETE", path, reader, nil).wantError(http.StatusForbidden, apierror.Forbidden, "", "delete")
	e.do("DELETE", path, writer, nil).wantError(http.StatusForbidden, apierror.Forbidden, "", "delete")
	e.do("POST", "/api/entities/bulk/archive", writer, map[string]any{"ids": []string{ent.ID.String()}}).wantError(http.StatusForbidden, apierror.Forbidden, "", "delete")

	// Limits on types: a task-only key may not write memories.
	tasks := e.key(postgram.KeySpec{Name: "tasks", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite},
		AllowedTypes: []postgram.EntityType{postgram.TypeTask}})
	e.do("POST", "/api/entities", tasks, map[string]any{"type": "memory", "content": "x"}).wantError(http.StatusForbidden, apierror.Forbidden, "", "type")
	e.do("POST", "/api/entities", tasks, map[string]any{"type": "task", "content": "x"}).want(http.StatusCreated)
	e.do("GET", path, tasks, nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")
}

// A key limited to visibility personal never sees work entities: not by
// id, not in lists, not in search (whatever filters it asks for).
func TestVisibilityLimitedKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	personal := e.store(e.admin, map[string]any{"type": "memory", "content": "Quarterly roadmap notes personal copy", "visibility": "personal"})
	work := e.store(e.admin, map[string]any{"type": "memory", "content": "Quarterly roadmap notes work copy", "visibility": "work"})
	e.enrich()
	limited := e.key(postgram.KeySpec{Name: "personal-only", Scopes: postgram.AllScopes,
		AllowedVisibilities: []postgram.Visibility{postgram.VisibilityPersonal}})

	e.do("GET", "/api/entities/"+personal.ID.String(), limited, nil).want(http.StatusOK)
	e.do("GET", "/api/entities/"+work.ID.String(), limited, nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")
	e.do("PATCH", "/api/entities/"+work.ID.String(), limited, map[string]any{"version": 1, "content": "x"}).wantError(http.StatusNotFound, apierror.NotFound, "", "")
	e.do("DELETE", "/api/entities/"+work.ID.String(), limited, nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")

	for _, q := range []string{"", "?visibility=work", "?visibility=work,personal", "?include_archived=true"} {
		r := e.do("GET", "/api/entities"+q, limited, nil).want(http.StatusOK)
		if strings.Contains(string(r.Body), work.ID.String()) || strings.Contains(string(r.Body), `"work"`) {
			t.Errorf("list%s shows a work entity: %s", q, r.Body)
		}
	}
	for _, body := range []map[string]any{
		{"query": "quarterly roadmap"},
		{"query": "quarterly roadmap", "visibility": "work"},
		{"query": "quarterly roadmap", "visibility": []string{"work", "personal"}, "expand_graph": true},
	} {
		out, r := e.search(limited, body)
		if strings.Contains(string(r.Body), work.ID.String()) {
			t.Errorf("search %v shows a work entity: %s", body, r.Body)
		}
		for _, res := range out.Results {
			if res.Entity["visibility"] != "personal" {
				t.Errorf("search result visibility %v", res.Entity["visibility"])
			}
		}
	}
	out, _ := e.search(limited, map[string]any{"query": "quarterly roadmap"})
	if len(out.Results) != 1 || out.Results[0].Entity["id"] != personal.ID.String() {
		t.Errorf("limited search: %+v", out.Results)
	}
	// The admin key sees both.
	out, _ = e.search(e.admin, map[string]any{"query": "quarterly roadmap"})
	if len(out.Results) != 2 {
		t.Errorf("admin search: %d results", len(out.Results))
	}
	// Writing work content is refused.
	e.do("POST", "/api/entities", limited, map[string]any{"type": "memory", "content": "x", "visibility": "work"}).wantError(http.StatusForbidden, apierror.Forbidden, "", "visibility")
}
