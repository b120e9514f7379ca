package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/internal/toon"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/sqlite"
	pmcp "github.com/postgram-go/postgram/transport/mcp"
	"github.com/postgram-go/postgram/transport/rest"
)

// env is one test's server: a fresh store (a PostgreSQL schema unless
// newEnvOn names sqlite), an admin client, the MCP server and its HTTP
// endpoint behind the access log.
type env struct {
	admin *postgram.Client
	emb   *postgramtest.Embedder
	srv   *server.MCPServer
	ts    *httptest.Server
}

func newEnv(t testing.TB) *env { return newEnvOn(t, "postgres", nil) }

// backends are the stores the access tests run on.
var backends = []string{"sqlite", "postgres"}

// newEnvOn builds an env on backend ("sqlite" or "postgres"). Logs go to
// logs as JSON at level Debug when it is non-nil, else to the test log at
// Warn.
func newEnvOn(t testing.TB, backend string, logs io.Writer) *env {
	t.Helper()
	ctx := context.Background()
	var st driver.Storage
	switch backend {
	case "sqlite":
		s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "postgram.db")})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		st = s
	default:
		s, err := postgres.Open(ctx, postgres.Config{URL: pgtest.Schema(t), MaxConns: 4})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		st = s
	}
	emb := postgramtest.NewEmbedder(64)
	admin, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: emb})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if logs != nil {
		logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv := pmcp.NewServer(pmcp.Config{Client: admin, Version: "test", Logger: logger})
	ts := httptest.NewServer(rest.RequestID(rest.AccessLog(logger)(pmcp.HTTPHandler(srv, postgramtest.Admin(t, admin), logger))))
	t.Cleanup(ts.Close)
	return &env{admin: admin, emb: emb, srv: srv, ts: ts}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// key creates an API key.
func (e *env) key(t testing.TB, spec postgram.KeySpec) string {
	t.Helper()
	tok, _, err := postgramtest.Admin(t, e.admin).CreateKey(context.Background(), spec)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	return tok
}

func (e *env) rwKey(t testing.TB) string {
	return e.key(t, postgram.KeySpec{Name: "agent", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite, postgram.ScopeDelete}})
}

// connect starts and initializes an mcp-go client against the endpoint.
func connect(t *testing.T, baseURL string, headers map[string]string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(baseURL, transport.WithHTTPHeaders(headers))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, opts...)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	req := mcpgo.InitializeRequest{}
	req.Params.ClientInfo = mcpgo.Implementation{Name: "postgram-test", Version: "1"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ServerInfo.Name != pmcp.ServerName || res.ServerInfo.Version != "test" {
		t.Fatalf("serverInfo = %+v", res.ServerInfo)
	}
	return c
}

func bearer(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

// call invokes a tool and returns the result with its structuredContent
// decoded; it checks that the text content holds the same JSON (unless
// the text is TOON).
func call(t *testing.T, c *client.Client, name string, args map[string]any) (*mcpgo.CallToolResult, map[string]any) {
	t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if len(res.RawStructuredContent) == 0 {
		t.Fatalf("call %s: no structuredContent", name)
	}
	var sc map[string]any
	if err := json.Unmarshal(res.RawStructuredContent, &sc); err != nil {
		t.Fatalf("call %s: structuredContent: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("call %s: %d content items, want 1", name, len(res.Content))
	}
	if args["toon"] != true {
		var tc map[string]any
		if err := json.Unmarshal([]byte(text(t, res)), &tc); err != nil {
			t.Fatalf("call %s: text content is not JSON: %v", name, err)
		}
		if d := cmp.Diff(sc, tc); d != "" {
			t.Fatalf("call %s: text and structuredContent differ:\n%s", name, d)
		}
	}
	return res, sc
}

func text(t *testing.T, res *mcpgo.CallToolResult) string {
	t.Helper()
	tc, ok := res.Content[0].(mcpgo.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// ok calls a tool that must succeed.
func ok(t *testing.T, c *client.Client, name string, args map[string]any) map[string]any {
	t.Helper()
	res, sc := call(t, c, name, args)
	if res.IsError {
		t.Fatalf("call %s: tool error %s", name, text(t, res))
	}
	return sc
}

// fail calls a tool that must fail with code and returns the error body.
func fail(t *testing.T, c *client.Client, name string, args map[string]any, code string) map[string]any {
	t.Helper()
	res, sc := call(t, c, name, args)
	if !res.IsError {
		t.Fatalf("call %s: succeeded (%s), want %s", name, text(t, res), code)
	}
	body, _ := sc["error"].(map[string]any)
	if body == nil || body["code"] != code || body["message"] == "" {
		t.Fatalf("call %s: error %s, want an envelope with code %s", name, text(t, res), code)
	}
	return body
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestToolsList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.key(t, postgram.KeySpec{Name: "reader"})
	for _, tc := range []struct {
		name string
		opts []client.ClientOption
	}{{"negotiated", nil}, {"legacy handshake", []client.ClientOption{client.WithLegacyProtocolOnly()}}} {
		t.Run(tc.name, func(t *testing.T) {
			c := connect(t, e.ts.URL, bearer(key), tc.opts...)
			res, err := c.ListTools(context.Background(), mcpgo.ListToolsRequest{})
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			byName := map[string]mcpgo.Tool{}
			for _, tool := range res.Tools {
				byName[tool.Name] = tool
			}
			want := map[string][]string{
				"store":                 {"type", "content"},
				"recall":                {"id"},
				"search":                {"query"},
				"update":                {"id", "version"},
				"delete":                {"id"},
				"queue":                 nil,
				"task_create":           {"content"},
				"task_list":             nil,
				"task_update":           {"id", "version"},
				"task_complete":         {"id", "version"},
				"store_session_context": {"content"},
				"groom_session_context": nil,
				"link":                  {"source_id", "target_id", "relation"},
				"unlink":                {"id"},
				"expand":                {"id"},
				"sync_push":             {"repo", "files"},
				"sync_status":           {"repo"},
			}
			if len(byName) != len(want) {
				t.Errorf("tools = %v, want %v", keys(toAny(byName)), want)
			}
			for name, required := range want {
				tool, found := byName[name]
				if !found {
					t.Errorf("tool %s missing", name)
					continue
				}
				if len(tool.Description) < 80 {
					t.Errorf("%s: description too short for agents: %q", name, tool.Description)
				}
				s := tool.InputSchema
				if s.Type != "object" || s.AdditionalProperties != false {
					t.Errorf("%s: schema type %q additionalProperties %v", name, s.Type, s.AdditionalProperties)
				}
				if !slices.Equal(s.Required, required) {
					t.Errorf("%s: required = %v, want %v", name, s.Required, required)
				}
				if _, has := s.Properties["full_response"]; !has {
					t.Errorf("%s: no full_response argument", name)
				}
				for pn, p := range s.Properties {
					pm, _ := p.(map[string]any)
					if d, _ := pm["description"].(string); d == "" || pm["type"] == nil {
						t.Errorf("%s.%s: schema %v lacks a type or description", name, pn, p)
					}
				}
			}
			search := byName["search"].InputSchema.Properties
			for _, p := range []string{"query", "type", "tags", "visibility", "owner", "memory_role", "limit", "threshold",
				"recency_weight", "expand_graph", "include_archived", "toon", "explain", "ranking"} {
				if _, has := search[p]; !has {
					t.Errorf("search: no %s argument", p)
				}
			}
			if d := byName["search"].Description; !strings.Contains(d, "0..1") || !strings.Contains(d, "explain") || !strings.Contains(d, "recall") {
				t.Errorf("search description does not explain scores and recall: %q", d)
			}
			if ro := byName["search"].Annotations.ReadOnlyHint; ro == nil || !*ro {
				t.Error("search is not marked read-only")
			}
			if d := byName["delete"].Annotations.DestructiveHint; d == nil || !*d {
				t.Error("delete is not marked destructive")
			}
		})
	}
}

func toAny[V any](m map[string]V) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestStoreSearchRecall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := connect(t, e.ts.URL, bearer(e.rwKey(t)))

	long := "Decision PGM-42: we use pgvector HNSW indexes for chunk embeddings. " + strings.Repeat("Background detail. ", 40)
	stored := ok(t, c, "store", map[string]any{
		"type": "memory", "content": long, "tags": `["decision","postgram"]`, "visibility": "work",
		"metadata": `{"topic":"search"}`,
	})
	if d := cmp.Diff([]string{"entity"}, keys(stored)); d != "" {
		t.Fatalf("store answer keys (-want +got):\n%s", d)
	}
	ack := stored["entity"].(map[string]any)
	if d := cmp.Diff([]string{"enrichment_status", "id", "status", "type", "version", "visibility"}, keys(ack)); d != "" {
		t.Fatalf("compact write keys (-want +got):\n%s", d)
	}
	if ack["type"] != "memory" || ack["version"] != 1.0 || ack["status"] != "active" || ack["visibility"] != "work" ||
		ack["enrichment_status"] != "pending" {
		t.Fatalf("compact write = %v", ack)
	}
	id := ack["id"].(string)
	ok(t, c, "store", map[string]any{"type": "document", "content": "Unrelated grocery list: apples, pears."})

	// Keyword search finds it at once; compact rows.
	res := ok(t, c, "search", map[string]any{"query": "PGM-42", "limit": "5"})
	rows := res["results"].([]any)
	if len(rows) != 1 {
		t.Fatalf("search rows = %v", rows)
	}
	row := rows[0].(map[string]any)
	if d := cmp.Diff([]string{"chunk", "content", "id", "score", "tags", "type"}, keys(row)); d != "" {
		t.Fatalf("compact row keys (-want +got):\n%s", d)
	}
	if row["id"] != id || row["type"] != "memory" || !strings.HasPrefix(long, strings.TrimSuffix(row["content"].(string), "…")) ||
		!strings.HasSuffix(row["content"].(string), "…") || len([]rune(row["content"].(string))) != 201 {
		t.Fatalf("compact row = %v", row)
	}
	if s := row["score"].(float64); s <= 0 || s > 1 { // ranking v2 scores lie in (0, 1]
		t.Fatalf("score %v outside (0, 1]", s)
	}
	if chunk := row["chunk"].(string); !strings.Contains(chunk, "PGM-42") {
		t.Fatalf("chunk %q does not hold the match", chunk)
	}
	if d := cmp.Diff([]any{"decision", "postgram"}, row["tags"]); d != "" {
		t.Fatalf("tags: %s", d)
	}

	// Embed, then semantic search with stringly-typed options.
	if _, err := postgramtest.Admin(t, e.admin).EnrichPending(context.Background()); err != nil {
		t.Fatal(err)
	}
	res = ok(t, c, "search", map[string]any{"query": "which index do we use for embeddings", "threshold": "0.1",
		"type": "memory", "tags": "decision", "expand_graph": "false", "recency_weight": "0"})
	if rows := res["results"].([]any); len(rows) != 1 || rows[0].(map[string]any)["id"] != id {
		t.Fatalf("semantic search = %v", res)
	}

	// full_response: the REST shape.
	full := ok(t, c, "search", map[string]any{"query": "PGM-42", "full_response": "1"})
	frow := full["results"].([]any)[0].(map[string]any)
	for _, k := range []string{"entity", "chunk_content", "similarity", "score"} {
		if _, has := frow[k]; !has {
			t.Errorf("full result lacks %s: %v", k, keys(frow))
		}
	}
	if frow["entity"].(map[string]any)["content"] != long {
		t.Error("full result does not carry the complete content")
	}

	// toon: TOON text of the same object as structuredContent.
	tres, sc := call(t, c, "search", map[string]any{"query": "PGM-42", "toon": true})
	if tres.IsError {
		t.Fatalf("toon search: %s", text(t, tres))
	}
	txt := text(t, tres)
	if strings.HasPrefix(txt, "{") {
		t.Fatalf("toon text looks like JSON: %s", txt)
	}
	decoded, err := toon.Unmarshal([]byte(txt))
	if err != nil {
		t.Fatalf("toon.Unmarshal: %v\n%s", err, txt)
	}
	js, _ := json.Marshal(decoded)
	var fromTOON map[string]any
	if err := json.Unmarshal(js, &fromTOON); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(sc, fromTOON); d != "" {
		t.Fatalf("TOON differs from structuredContent (-json +toon):\n%s\n%s", d, txt)
	}

	// recall: the full entity.
	rec := ok(t, c, "recall", map[string]any{"id": id})
	ent := rec["entity"].(map[string]any)
	if d := cmp.Diff([]string{"content", "created_at", "enrichment_status", "id", "metadata", "owner", "source", "status",
		"tags", "type", "updated_at", "version", "visibility"}, keys(ent)); d != "" {
		t.Fatalf("recall keys (-want +got):\n%s", d)
	}
	if ent["content"] != long || ent["metadata"].(map[string]any)["topic"] != "search" ||
		ent["metadata"].(map[string]any)["memory_role"] != "durable_memory" || ent["enrichment_status"] != "completed" {
		t.Fatalf("recall = %v", ent)
	}
	frec := ok(t, c, "recall", map[string]any{"id": id, "full_response": true})
	if _, has := frec["entity"].(map[string]any)["enrichment_attempts"]; !has {
		t.Fatalf("full recall lacks library fields: %v", keys(frec["entity"].(map[string]any)))
	}

	// delete archives; search no longer finds it unless include_archived.
	del := ok(t, c, "delete", map[string]any{"id": id})
	if d := cmp.Diff(map[string]any{"id": id, "deleted": true}, del); d != "" {
		t.Fatalf("delete: %s", d)
	}
	if rows := ok(t, c, "search", map[string]any{"query": "PGM-42"})["results"].([]any); len(rows) != 0 {
		t.Fatalf("archived entity still found: %v", rows)
	}
	if rows := ok(t, c, "search", map[string]any{"query": "PGM-42", "include_archived": "true"})["results"].([]any); len(rows) != 1 {
		t.Fatalf("include_archived: %v", rows)
	}
}

func TestUpdateAndConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := connect(t, e.ts.URL, bearer(e.rwKey(t)))
	id := ok(t, c, "store", map[string]any{"type": "task", "content": "Write the MCP adapter", "tags": "a,b"})["entity"].(map[string]any)["id"]

	up := ok(t, c, "update", map[string]any{"id": id, "version": "1", "status": "next", "tags": []any{"mcp"},
		"metadata": map[string]any{"priority": 1}})
	if a := up["entity"].(map[string]any); a["version"] != 2.0 || a["status"] != "next" {
		t.Fatalf("update = %v", up)
	}
	full := ok(t, c, "update", map[string]any{"id": id, "version": 2, "content": "Write and test the MCP adapter",
		"metadata": `{"priority":null,"owner_note":"x"}`, "full_response": "true"})
	ent := full["entity"].(map[string]any)
	if ent["version"] != 3.0 || ent["content"] != "Write and test the MCP adapter" || ent["enrichment_status"] != "pending" {
		t.Fatalf("full update = %v", ent)
	}
	if m := ent["metadata"].(map[string]any); m["priority"] != nil || m["owner_note"] != "x" {
		t.Fatalf("metadata not shallow-merged: %v", m)
	}
	if d := cmp.Diff([]any{"mcp"}, ent["tags"]); d != "" {
		t.Fatalf("tags: %s", d)
	}

	// A stale version: CONFLICT with the current entity.
	body := fail(t, c, "update", map[string]any{"id": id, "version": 1, "content": "stale"}, "CONFLICT")
	cur, _ := body["details"].(map[string]any)["current"].(map[string]any)
	if cur == nil || cur["version"] != 3.0 || cur["content"] != "Write and test the MCP adapter" {
		t.Fatalf("conflict details = %v", body["details"])
	}
}

func TestBadArguments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := connect(t, e.ts.URL, bearer(e.rwKey(t)))
	tests := []struct {
		tool  string
		args  map[string]any
		code  string
		field string
	}{
		{"search", map[string]any{"query": "x", "bogus": 1, "limt": 2}, "VALIDATION", "bogus"},
		{"search", map[string]any{}, "VALIDATION", "query"},
		{"search", map[string]any{"query": "x", "limit": "five"}, "VALIDATION", "limit"},
		{"search", map[string]any{"query": "x", "limit": -1}, "VALIDATION", "limit"},
		{"search", map[string]any{"query": "x", "threshold": 2}, "VALIDATION", "threshold"},
		{"search", map[string]any{"query": "   "}, "VALIDATION", "query"},
		{"search", map[string]any{"query": "x", "memory_role": "forever"}, "VALIDATION", "memory_role"},
		{"store", map[string]any{"type": "memory"}, "VALIDATION", "content"},
		{"store", map[string]any{"type": "spaceship", "content": "x"}, "VALIDATION", "type"},
		{"store", map[string]any{"type": "memory", "content": "x", "metadata": "not json"}, "VALIDATION", "metadata"},
		{"store", map[string]any{"type": "memory", "content": "x", "metadata": map[string]any{"memory_role": "forever"}}, "VALIDATION", "metadata.memory_role"},
		{"recall", map[string]any{"id": "not-a-uuid"}, "VALIDATION", "id"},
		{"update", map[string]any{"id": "0190d6a4-7b8c-7def-8123-456789abcdef", "version": "1.5"}, "VALIDATION", "version"},
		{"queue", map[string]any{"failure_limit": 1000}, "VALIDATION", "failure_limit"},
	}
	for _, tt := range tests {
		body := fail(t, c, tt.tool, tt.args, tt.code)
		details, _ := body["details"].(map[string]any)
		if details["field"] != tt.field || !strings.Contains(body["message"].(string), tt.field) {
			t.Errorf("%s %v: error %v, want one naming %q", tt.tool, tt.args, body, tt.field)
		}
	}
	fail(t, c, "recall", map[string]any{"id": "0190d6a4-7b8c-7def-8123-456789abcdef"}, "NOT_FOUND")
	fail(t, c, "update", map[string]any{"id": "0190d6a4-7b8c-7def-8123-456789abcdef", "version": 1}, "NOT_FOUND")
}

func TestScopesAndLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	work, err := e.admin.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "Quarterly roadmap ZX-9 for work", Visibility: postgram.VisibilityWork})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "Personal ZX-9 birthday plan", Visibility: postgram.VisibilityPersonal}); err != nil {
		t.Fatal(err)
	}

	reader := connect(t, e.ts.URL, bearer(e.key(t, postgram.KeySpec{Name: "reader", Scopes: []postgram.Scope{postgram.ScopeRead}})))
	body := fail(t, reader, "store", map[string]any{"type": "memory", "content": "x"}, "FORBIDDEN")
	if !strings.Contains(body["message"].(string), "write") {
		t.Errorf("forbidden message %q does not name the scope", body["message"])
	}
	fail(t, reader, "delete", map[string]any{"id": work.ID.String()}, "FORBIDDEN")
	if rows := ok(t, reader, "search", map[string]any{"query": "ZX-9"})["results"].([]any); len(rows) != 2 {
		t.Fatalf("reader sees %d rows, want 2", len(rows))
	}
	q := ok(t, reader, "queue", map[string]any{"include_failures": "true"})
	if emb, _ := q["embedding"].(map[string]any); emb == nil || emb["pending"] != 2.0 {
		t.Fatalf("queue = %v", q)
	}
	if fq := ok(t, reader, "queue", map[string]any{"failure_limit": "5", "full_response": true}); fq["embedding"] == nil {
		t.Fatalf("full queue = %v", fq)
	}

	personal := connect(t, e.ts.URL, bearer(e.key(t, postgram.KeySpec{Name: "personal", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite},
		AllowedVisibilities: []postgram.Visibility{postgram.VisibilityPersonal}})))
	rows := ok(t, personal, "search", map[string]any{"query": "ZX-9"})["results"].([]any)
	if len(rows) != 1 || strings.Contains(rows[0].(map[string]any)["content"].(string), "work") {
		t.Fatalf("personal key sees %v", rows)
	}
	fail(t, personal, "recall", map[string]any{"id": work.ID.String()}, "NOT_FOUND")
	fail(t, personal, "store", map[string]any{"type": "memory", "content": "x", "visibility": "work"}, "FORBIDDEN")
}

func TestSessionContextIsClientScoped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := connect(t, e.ts.URL, bearer(e.key(t, postgram.KeySpec{Name: "a", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})))
	b := connect(t, e.ts.URL, bearer(e.key(t, postgram.KeySpec{Name: "b", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})))
	ok(t, a, "store", map[string]any{"type": "memory", "content": "We were debugging QX-7 flakiness",
		"metadata": map[string]any{"memory_role": "session_context"}})
	if rows := ok(t, a, "search", map[string]any{"query": "QX-7", "memory_role": "session_context"})["results"].([]any); len(rows) != 1 {
		t.Fatalf("owner client sees %v", rows)
	}
	if rows := ok(t, b, "search", map[string]any{"query": "QX-7"})["results"].([]any); len(rows) != 0 {
		t.Fatalf("other client sees session context: %v", rows)
	}
}

func TestHTTPAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.rwKey(t)
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`

	post := func(path string, header map[string]string, method string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, e.ts.URL+path, strings.NewReader(initBody))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	envelope := func(res *http.Response, status int, code, msgPart string) {
		t.Helper()
		if res.StatusCode != status {
			t.Fatalf("status %d, want %d", res.StatusCode, status)
		}
		var env struct {
			Error struct{ Code, Message string }
		}
		if err := json.NewDecoder(res.Body).Decode(&env); err != nil {
			t.Fatalf("body is not the envelope: %v", err)
		}
		if env.Error.Code != code || !strings.Contains(env.Error.Message, msgPart) {
			t.Fatalf("envelope %+v, want %s containing %q", env.Error, code, msgPart)
		}
	}

	res := post("", nil, http.MethodPost)
	envelope(res, 401, "UNAUTHORIZED", "missing API key")
	if !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("WWW-Authenticate = %q", res.Header.Get("WWW-Authenticate"))
	}
	envelope(post("", map[string]string{"Authorization": "Basic dXNlcjpwdw=="}, http.MethodPost), 401, "UNAUTHORIZED", "malformed Authorization")
	envelope(post("", map[string]string{"Authorization": "Bearer"}, http.MethodPost), 401, "UNAUTHORIZED", "malformed Authorization")
	envelope(post("", bearer("pgm-"+strings.Repeat("x", 43)), http.MethodPost), 401, "UNAUTHORIZED", "unknown API key")
	envelope(post("?apiKey=", nil, http.MethodPost), 401, "UNAUTHORIZED", "apiKey")
	envelope(post("", bearer(key), http.MethodGet), 405, "METHOD_NOT_ALLOWED", "GET")
	envelope(post("", bearer(key), http.MethodPut), 405, "METHOD_NOT_ALLOWED", "PUT")
	if res := post("", bearer(key), http.MethodPost); res.StatusCode != 200 {
		t.Fatalf("authenticated initialize: %d", res.StatusCode)
	} else if sid := res.Header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("stateless endpoint issued session id %q", sid)
	}

	// mcp-go's client: a missing key fails to initialize; ?apiKey= works.
	tr, err := transport.NewStreamableHTTP(e.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	anon := client.NewClient(tr)
	t.Cleanup(func() { _ = anon.Close() })
	if err := anon.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := anon.Initialize(context.Background(), mcpgo.InitializeRequest{}); err == nil {
		t.Fatal("initialize without a key succeeded")
	}
	c := connect(t, e.ts.URL+"?apiKey="+url.QueryEscape(key), nil)
	if rows := ok(t, c, "search", map[string]any{"query": "anything"})["results"].([]any); len(rows) != 0 {
		t.Fatalf("search = %v", rows)
	}

	// A revoked key is refused on its next request.
	tok, k, err := postgramtest.Admin(t, e.admin).CreateKey(context.Background(), postgram.KeySpec{Name: "temp"})
	if err != nil {
		t.Fatal(err)
	}
	rc := connect(t, e.ts.URL, bearer(tok))
	ok(t, rc, "queue", nil)
	if err := postgramtest.Admin(t, e.admin).RevokeKey(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "queue"
	if _, err := rc.CallTool(context.Background(), req); err == nil || !strings.Contains(err.Error(), "authorization required") {
		t.Fatalf("revoked key: err = %v", err)
	}
}

// TestHTTPWithoutAuthFailsClosed: a server mounted over HTTP without
// HTTPHandler does not fall back to Config.Client.
func TestHTTPWithoutAuthFailsClosed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ts := httptest.NewServer(server.NewStreamableHTTPServer(e.srv, server.WithStateLess(true)))
	t.Cleanup(ts.Close)
	c := connect(t, ts.URL, nil, client.WithLegacyProtocolOnly())
	fail(t, c, "search", map[string]any{"query": "x"}, "UNAUTHORIZED")
}

func TestStdio(t *testing.T) {
	// Not parallel: mcp-go keeps one stdio session per process.
	e := newEnv(t)
	srvIn, cliOut := io.Pipe()
	cliIn, srvOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pmcp.ServeStdio(ctx, e.srv, srvIn, srvOut) }()

	c := client.NewClient(transport.NewIO(cliIn, cliOut, io.NopCloser(strings.NewReader(""))), client.WithLegacyProtocolOnly())
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcpgo.InitializeRequest{}
	req.Params.ClientInfo = mcpgo.Implementation{Name: "desktop-host", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil || len(tools.Tools) < 6 { // every area adds tools; TestToolsList checks the exact set
		t.Fatalf("tools/list: %v, %v", tools, err)
	}
	// No authentication: the configured (admin) client acts.
	id := ok(t, c, "store", map[string]any{"type": "memory", "content": "Stdio works for PGM-7"})["entity"].(map[string]any)["id"]
	rows := ok(t, c, "search", map[string]any{"query": "PGM-7", "limit": "3"})["results"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["id"] != id {
		t.Fatalf("search = %v", rows)
	}
	fail(t, c, "recall", map[string]any{"id": "nope"}, "VALIDATION")

	cancel()
	_ = cliOut.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStdio: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after cancel")
	}
	_ = c.Close()
}

func TestHTTPOversizedBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"store","arguments":{"type":"memory","content":"` +
		strings.Repeat("x", pmcp.MaxRequestBytes) + `"}}}`
	req, _ := http.NewRequest(http.MethodPost, e.ts.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.rwKey(t))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var env struct{ Error struct{ Code string } }
	if err := json.NewDecoder(res.Body).Decode(&env); err != nil || res.StatusCode != 413 || env.Error.Code != "PAYLOAD_TOO_LARGE" {
		t.Fatalf("status %d, envelope %+v, err %v", res.StatusCode, env, err)
	}
}

// FuzzHTTPHandler posts arbitrary bodies with a valid key: the handler
// never panics and never answers 5xx.
func FuzzHTTPHandler(f *testing.F) {
	e := newEnv(f)
	key := e.rwKey(f)
	h := pmcp.HTTPHandler(e.srv, postgramtest.Admin(f, e.admin), nil)
	for _, s := range []string{
		``, `{`, `null`, `[]`, `{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"query":"x","limit":"5"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"store","arguments":{"type":"memory","content":"fuzz","tags":"a,b"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"update","arguments":"oops"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"recall","arguments":[1,2]}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"queue","arguments":{"failure_limit":"1e9"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body.String())
		}
		if strings.Contains(rec.Body.String(), `"code":"INTERNAL"`) {
			t.Fatalf("internal error for %q: %s", body, rec.Body.String())
		}
	})
}
