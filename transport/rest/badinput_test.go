package rest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/transport/rest"
)

func TestRouting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("GET", "/nope", "", nil).wantError(http.StatusNotFound, apierror.NotFound, "", "/nope")
	e.do("GET", "/api/nope", e.admin, nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")
	e.do("GET", "/api/entities/"+uuid.NewString()+"/extra", e.admin, nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")
	e.do("GET", "/api/nope", "", nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")

	cases := []struct{ method, path, allow string }{
		{"PUT", "/api/entities", "GET, POST"},
		{"DELETE", "/api/entities", "GET, POST"},
		{"POST", "/api/entities/" + uuid.NewString(), "GET, PATCH, DELETE"},
		{"GET", "/api/search", "POST"},
		{"GET", "/api/entities/bulk/archive", "POST"},
		{"DELETE", "/api/queue", "GET"},
		{"PUT", "/health", "GET, HEAD"},
	}
	for _, c := range cases {
		r := e.do(c.method, c.path, e.admin, nil)
		b := r.wantError(http.StatusMethodNotAllowed, apierror.MethodNotAllowed, "", c.method)
		if got := r.Header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
		if b.Details["allow"] == nil {
			t.Errorf("%s %s: no details.allow", c.method, c.path)
		}
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ent := e.store(e.admin, map[string]any{"type": "memory", "content": "x"})
	path := "/api/entities/" + ent.ID.String()
	type tc struct {
		name, method, path, body string
		field, msg               string
	}
	cases := []tc{
		// Bodies.
		{"empty body", "POST", "/api/entities", "", "body", "empty"},
		{"whitespace body", "POST", "/api/search", "  \n", "body", "empty"},
		{"array body", "POST", "/api/entities", `[1,2]`, "body", "JSON object"},
		{"null body", "POST", "/api/entities", `null`, "body", "JSON object"},
		{"string body", "POST", "/api/search", `"query"`, "body", "JSON object"},
		{"malformed", "POST", "/api/entities", `{"type":"memory",`, "body", "malformed JSON"},
		{"syntax", "POST", "/api/entities", `{"type":memory}`, "body", "malformed JSON"},
		{"trailing data", "POST", "/api/entities", `{"type":"memory","content":"x"} {"again":1}`, "body", "single JSON object"},
		{"unknown field", "POST", "/api/entities", `{"type":"memory","content":"x","colour":"red"}`, "colour", "unknown field"},
		{"unknown field camelCase", "POST", "/api/entities", `{"type":"memory","content":"x","skipExtraction":true}`, "skipExtraction", "skip_extraction"},
		{"unknown search field", "POST", "/api/search", `{"query":"x","fuzzy":true}`, "fuzzy", "unknown field"},
		{"unknown patch field", "PATCH", path, `{"version":1,"id":"x"}`, "id", "unknown field"},
		{"content type", "POST", "/api/entities", `{"type":"memory","content":5}`, "content", "expected a string, got a number"},
		{"tags type", "POST", "/api/entities", `{"type":"memory","content":"x","tags":"a,b"}`, "tags", "expected an array of strings"},
		{"tag item type", "POST", "/api/entities", `{"type":"memory","content":"x","tags":["a",2]}`, "tags", "an item is a number"},
		{"metadata type", "POST", "/api/entities", `{"type":"memory","content":"x","metadata":[1]}`, "metadata", "expected an object"},
		{"bool type", "POST", "/api/entities", `{"type":"memory","content":"x","skip_extraction":"yes"}`, "skip_extraction", "expected a boolean"},
		{"version type", "PATCH", path, `{"version":"1"}`, "version", "expected an integer"},
		{"version float", "PATCH", path, `{"version":1.5}`, "version", "expected an integer"},
		{"limit huge", "POST", "/api/search", `{"query":"x","limit":1e30}`, "limit", "expected an integer"},
		// Missing or invalid values (the library's validation).
		{"missing type", "POST", "/api/entities", `{"content":"x"}`, "type", ""},
		{"bad type", "POST", "/api/entities", `{"type":"gizmo","content":"x"}`, "type", "gizmo"},
		{"missing content", "POST", "/api/entities", `{"type":"memory"}`, "content", "empty"},
		{"bad visibility", "POST", "/api/entities", `{"type":"memory","content":"x","visibility":"public"}`, "visibility", "public"},
		{"bad status", "POST", "/api/entities", `{"type":"memory","content":"x","status":"zombie"}`, "status", ""},
		{"bad role", "POST", "/api/entities", `{"type":"memory","content":"x","metadata":{"memory_role":"boss"}}`, "metadata.memory_role", ""},
		{"empty tag", "POST", "/api/entities", `{"type":"memory","content":"x","tags":[" "]}`, "tags[0]", ""},
		{"missing version", "PATCH", path, `{"content":"y"}`, "version", "required"},
		{"zero version", "PATCH", path, `{"version":0}`, "version", ""},
		{"patch bad status", "PATCH", path, `{"version":1,"status":"zombie"}`, "status", ""},
		{"missing query", "POST", "/api/search", `{}`, "query", ""},
		{"recency", "POST", "/api/search", `{"query":"x","recency_weight":-1}`, "recency_weight", ""},
		// Paths.
		{"bad uuid get", "GET", "/api/entities/not-a-uuid", "", "id", "not a UUID"},
		{"bad uuid patch", "PATCH", "/api/entities/1234", `{"version":1}`, "id", "not a UUID"},
		{"bad uuid delete", "DELETE", "/api/entities/bulk", "", "id", "not a UUID"},
		{"uuid braces", "GET", "/api/entities/%7B" + ent.ID.String() + "%7D", "", "id", "not a UUID"},
		// Query parameters.
		{"limit negative", "GET", "/api/entities?limit=-1", "", "limit", "between 1 and 500"},
		{"limit too large", "GET", "/api/entities?limit=501", "", "limit", "between 1 and 500"},
		{"limit big", "GET", "/api/entities?limit=501", "", "limit", "between 1 and 500"},
		{"limit text", "GET", "/api/entities?limit=ten", "", "limit", "integer"},
		{"offset negative", "GET", "/api/entities?offset=-1", "", "offset", ""},
		{"offset too far", "GET", "/api/entities?offset=2000000", "", "offset", ""},
		{"limit twice", "GET", "/api/entities?limit=1&limit=2", "", "limit", "more than once"},
		{"archived bool", "GET", "/api/entities?include_archived=perhaps", "", "include_archived", "true or false"},
		{"list type", "GET", "/api/entities?type=memory,gizmo", "", "type[1]", "gizmo"},
		{"list status", "GET", "/api/entities?status=zombie", "", "status", ""},
		{"list visibility", "GET", "/api/entities?visibility=public", "", "visibility", ""},
		{"list role", "GET", "/api/entities?memory_role=boss", "", "memory_role", ""},
		{"unknown param", "GET", "/api/entities?sort=asc", "", "sort", "unknown query parameter"},
		{"param on get", "GET", path + "?full=1", "", "full", "unknown query parameter"},
		{"bad query string", "GET", "/api/entities?limit=%zz", "", "query", "malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			req, err := http.NewRequest(c.method, e.http.URL+c.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+e.admin)
			e.send(req).wantError(http.StatusBadRequest, apierror.Validation, c.field, c.msg)
		})
	}
}

func TestPayloadTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	big := `{"type":"memory","content":"` + strings.Repeat("a", int(rest.DefaultMaxBodyBytes)) + `"}`
	// With a Content-Length.
	e.do("POST", "/api/entities", e.admin, big).wantError(http.StatusRequestEntityTooLarge, apierror.PayloadTooLarge, "", "limit")
	// Streamed (chunked, no Content-Length).
	req, _ := http.NewRequest("POST", e.http.URL+"/api/search", io.MultiReader(strings.NewReader(big)))
	req.Header.Set("Authorization", "Bearer "+e.admin)
	r := e.send(req)
	b := r.wantError(http.StatusRequestEntityTooLarge, apierror.PayloadTooLarge, "", "")
	if b.Details["limit_bytes"] != float64(rest.DefaultMaxBodyBytes) {
		t.Errorf("details %v", b.Details)
	}

	// A configured limit applies.
	small := newEnv(t, func(c *rest.Config) { c.MaxBodyBytes = 64 })
	small.do("POST", "/api/entities", small.admin, map[string]any{"type": "memory", "content": strings.Repeat("b", 100)}).
		wantError(http.StatusRequestEntityTooLarge, apierror.PayloadTooLarge, "", "64 bytes")
	small.do("POST", "/api/entities", small.admin, map[string]any{"type": "memory", "content": "fits"}).want(http.StatusCreated)

	// Content over the library's 1 MiB limit but under the body limit is a
	// VALIDATION error naming content.
	e.do("POST", "/api/entities", e.admin, map[string]any{"type": "memory", "content": strings.Repeat("c", 1<<20+1)}).
		wantError(http.StatusBadRequest, apierror.Validation, "content", "maximum")
}
