package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postgram-go/postgram/transport/apierror"
)

// testKey is the API key the fake server accepts for everything;
// readKey may only read.
const (
	testKey = "pgm-test-key"
	readKey = "pgm-read-only"
)

// request is one request the fake server received.
type request struct {
	Method string
	Path   string
	Query  map[string]string
	Auth   string
	Body   map[string]any
}

// fakeServer speaks the REST wire format of DESIGN.md §8 over an in-memory
// store, minimally: enough for the CLI's unit tests. Unknown body fields
// are rejected, as the real server does.
type fakeServer struct {
	*httptest.Server
	t *testing.T

	mu       sync.Mutex
	reqs     []request
	entities map[string]map[string]any
	order    []string
	nextID   int
	now      time.Time
	// override, when set, answers every /api request instead.
	override http.HandlerFunc
	// degraded is added to search responses.
	degraded []map[string]any
}

func newFake(t *testing.T) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, entities: map[string]map[string]any{}, now: time.Now().UTC()}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// last returns the last request received.
func (f *fakeServer) last() request {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		f.t.Fatal("the fake server received no request")
	}
	return f.reqs[len(f.reqs)-1]
}

func (f *fakeServer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// seed stores an entity directly and returns it.
func (f *fakeServer) seed(typ, content string, tags []string, age time.Duration) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.create(map[string]any{"type": typ, "content": content, "tags": anySlice(tags)}, f.now.Add(-age))
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (f *fakeServer) create(in map[string]any, at time.Time) map[string]any {
	f.nextID++
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", f.nextID)
	e := map[string]any{
		"id": id, "type": in["type"], "content": in["content"], "visibility": "shared", "owner": "",
		"status": "active", "tags": []any{}, "source": "", "metadata": map[string]any{}, "version": 1,
		"enrichment_status": "pending", "enrichment_attempts": 0, "extraction_status": "skipped",
		"created_at": at.Format(time.RFC3339Nano), "updated_at": at.Format(time.RFC3339Nano),
	}
	for _, k := range []string{"visibility", "owner", "status", "tags", "source", "metadata"} {
		if v, ok := in[k]; ok && v != nil {
			e[k] = v
		}
	}
	f.entities[id] = e
	f.order = append(f.order, id)
	return e
}

func writeJSONResponse(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code apierror.Code, msg string, details map[string]any) {
	apierror.Write(w, apierror.New(code, msg, details))
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	rec := request{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Query: map[string]string{}}
	for k := range r.URL.Query() {
		rec.Query[k] = r.URL.Query().Get(k)
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&rec.Body); err != nil {
			f.mu.Lock()
			f.reqs = append(f.reqs, rec)
			f.mu.Unlock()
			fail(w, apierror.Validation, "malformed JSON: "+err.Error(), nil)
			return
		}
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, rec)
	override := f.override
	f.mu.Unlock()
	if override != nil {
		override(w, r)
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		fail(w, apierror.NotFound, "no route", nil)
		return
	}
	auth := strings.TrimPrefix(rec.Auth, "Bearer ")
	if auth != testKey && auth != readKey {
		fail(w, apierror.Unauthorized, "missing or invalid API key", nil)
		return
	}
	if auth == readKey && r.Method != http.MethodGet && r.URL.Path != "/api/search" {
		fail(w, apierror.Forbidden, "the key lacks the write scope", nil)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, "/api")
	switch {
	case path == "/entities" && r.Method == http.MethodPost:
		if bad := unknownField(rec.Body, "type", "content", "visibility", "owner", "status", "tags", "source", "metadata", "skip_extraction"); bad != "" {
			fail(w, apierror.Validation, "unknown field "+bad, map[string]any{"field": bad})
			return
		}
		if v, ok := rec.Body["visibility"].(string); ok && v != "personal" && v != "work" && v != "shared" {
			fail(w, apierror.Validation, fmt.Sprintf("invalid visibility: %q is not one of personal, work, shared", v), map[string]any{"field": "visibility"})
			return
		}
		if s, _ := rec.Body["content"].(string); strings.TrimSpace(s) == "" {
			fail(w, apierror.Validation, "invalid content: must not be empty", map[string]any{"field": "content"})
			return
		}
		writeJSONResponse(w, http.StatusCreated, map[string]any{"entity": f.create(rec.Body, f.now)})
	case path == "/entities" && r.Method == http.MethodGet:
		f.list(w, rec)
	case strings.HasPrefix(path, "/entities/"):
		id := strings.TrimPrefix(path, "/entities/")
		e, ok := f.entities[id]
		if !ok {
			fail(w, apierror.NotFound, "entity "+id+" not found", nil)
			return
		}
		switch r.Method {
		case http.MethodGet:
			writeJSONResponse(w, http.StatusOK, map[string]any{"entity": e})
		case http.MethodPatch:
			f.patch(w, rec, e)
		case http.MethodDelete:
			e["status"] = "archived"
			writeJSONResponse(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
		default:
			fail(w, apierror.MethodNotAllowed, "method not allowed", nil)
		}
	case path == "/search" && r.Method == http.MethodPost:
		f.search(w, rec)
	case path == "/queue" && r.Method == http.MethodGet:
		resp := map[string]any{
			"embedding":  map[string]any{"pending": 3, "completed": 120, "failed": 1, "retry_eligible": 1, "oldest_pending_secs": 95.4},
			"extraction": nil,
		}
		if rec.Query["include_failures"] == "true" {
			resp["failures"] = []any{map[string]any{"id": "00000000-0000-4000-8000-000000000099", "type": "document",
				"kind": "embedding", "error": "provider said 500\nretry later", "path": "notes/a.md",
				"updated_at": f.now.Add(-3 * time.Hour).Format(time.RFC3339)}}
		}
		writeJSONResponse(w, http.StatusOK, resp)
	default:
		fail(w, apierror.NotFound, "no route "+r.Method+" "+r.URL.Path, nil)
	}
}

func unknownField(body map[string]any, known ...string) string {
	var bad []string
	for k := range body {
		found := false
		for _, n := range known {
			found = found || k == n
		}
		if !found {
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		return bad[0]
	}
	return ""
}

func (f *fakeServer) patch(w http.ResponseWriter, rec request, e map[string]any) {
	if bad := unknownField(rec.Body, "version", "content", "visibility", "owner", "status", "tags", "source", "metadata"); bad != "" {
		fail(w, apierror.Validation, "unknown field "+bad, map[string]any{"field": bad})
		return
	}
	v, _ := rec.Body["version"].(json.Number)
	n, _ := v.Int64()
	if cur := int64(e["version"].(int)); n != cur {
		fail(w, apierror.Conflict, fmt.Sprintf("version conflict on %s: expected version %d, current version is %d", e["id"], n, cur),
			map[string]any{"current": e})
		return
	}
	for _, k := range []string{"content", "visibility", "owner", "status", "tags", "source"} {
		if v, ok := rec.Body[k]; ok {
			e[k] = v
		}
	}
	if m, ok := rec.Body["metadata"].(map[string]any); ok {
		md := e["metadata"].(map[string]any)
		for k, v := range m {
			if v == nil {
				delete(md, k)
			} else {
				md[k] = v
			}
		}
	}
	e["version"] = e["version"].(int) + 1
	writeJSONResponse(w, http.StatusOK, map[string]any{"entity": e})
}

func (f *fakeServer) list(w http.ResponseWriter, rec request) {
	var items []any
	for i := len(f.order) - 1; i >= 0; i-- {
		e := f.entities[f.order[i]]
		if t := rec.Query["type"]; t != "" && e["type"] != t {
			continue
		}
		if e["status"] == "archived" && rec.Query["include_archived"] != "true" {
			continue
		}
		items = append(items, e)
	}
	limit, offset := 50, 0
	if s := rec.Query["limit"]; s != "" {
		limit, _ = strconv.Atoi(s)
	}
	if s := rec.Query["offset"]; s != "" {
		offset, _ = strconv.Atoi(s)
	}
	total := len(items)
	items = items[min(offset, total):min(offset+limit, total)]
	if items == nil {
		items = []any{}
	}
	writeJSONResponse(w, http.StatusOK, map[string]any{"items": items, "total": total, "limit": limit, "offset": offset})
}

func (f *fakeServer) search(w http.ResponseWriter, rec request) {
	if bad := unknownField(rec.Body, "query", "type", "tags", "visibility", "owner", "limit", "threshold", "recency_weight",
		"expand_graph", "include_archived", "memory_role", "include_content"); bad != "" {
		fail(w, apierror.Validation, "unknown field "+bad, map[string]any{"field": bad})
		return
	}
	q, _ := rec.Body["query"].(string)
	results := []any{}
	rank := 0
	for _, id := range f.order {
		e := f.entities[id]
		c, _ := e["content"].(string)
		if !strings.Contains(strings.ToLower(c), strings.ToLower(q)) {
			continue
		}
		rank++
		score := 1/float64(60+rank) + 1/float64(60+rank)
		res := map[string]any{"entity": e, "chunk_content": c, "similarity": 0.8, "score": score, "recency_score": score}
		if rec.Body["expand_graph"] == true {
			res["edges"] = map[string]any{"count": 1, "relations": []any{map[string]any{"relation": "involves", "count": 1}}}
			res["related"] = []any{map[string]any{"entity": map[string]any{"id": "00000000-0000-4000-8000-000000000777",
				"type": "person", "content": "Ada Lovelace"}, "relation": "involves", "direction": "outgoing"}}
		}
		results = append(results, res)
	}
	resp := map[string]any{"results": results, "stats": map[string]any{"terms": []any{q}}}
	if f.degraded != nil {
		resp["degraded"] = f.degraded
	}
	writeJSONResponse(w, http.StatusOK, resp)
}

// --- driving run -------------------------------------------------------

// result is one run of pgm.
type result struct {
	code   int
	stdout string
	stderr string
}

// envOf makes a getenv from a map.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// pgm runs the CLI against f with the test key and no ~/.pgmrc.
func (f *fakeServer) pgm(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return runPGM(t, map[string]string{"PGM_API_URL": f.URL, "PGM_API_KEY": testKey, "HOME": t.TempDir()}, stdin, args...)
}

func runPGM(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	return runPGMContext(t, context.Background(), env, stdin, args...)
}

func runPGMContext(t *testing.T, ctx context.Context, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(ctx, args, strings.NewReader(stdin), &out, &errb, envOf(env))
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// closedURL is the URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}
