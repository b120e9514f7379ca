package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
)

// api makes one REST call and decodes the JSON answer.
func api(t *testing.T, method, url, key string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: non-JSON answer %d: %s", method, url, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, out
}

func mcpClient(t *testing.T, base, key string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := mcpgo.InitializeRequest{}
	req.Params.ClientInfo = mcpgo.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

func toolCall(t *testing.T, c *client.Client, name string, args map[string]any) (bool, map[string]any) {
	t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var out map[string]any
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(mcpgo.TextContent); ok {
			_ = json.Unmarshal([]byte(tc.Text), &out)
		}
	}
	return res.IsError, out
}

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	dsn := freshDSN(t)
	admin := adminClient(t, dsn)
	srv := startServer(t, dsn)
	bootstrapToken(t, srv) // the first start hands over an admin key, outside the log
	rw, _ := newKey(t, admin, postgram.KeySpec{Name: "writer", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite, postgram.ScopeDelete}})

	// Health is open.
	code, health := api(t, "GET", srv.URL+"/health", "", nil)
	if code != 200 || health["status"] == nil {
		t.Fatalf("health: %d %v", code, health)
	}

	// A write through REST...
	code, body := api(t, "POST", srv.URL+"/api/entities", rw, map[string]any{
		"type": "memory", "content": "Decision OPS-7731: rotate the on-call pager weekly", "tags": []string{"ops"}})
	if code != 201 {
		t.Fatalf("store: %d %v", code, body)
	}
	ent := body["entity"].(map[string]any)
	id := ent["id"].(string)

	// ...is found by MCP search...
	mc := mcpClient(t, srv.URL, rw)
	isErr, res := toolCall(t, mc, "search", map[string]any{"query": "OPS-7731"})
	if isErr || !strings.Contains(fmt.Sprint(res), id) {
		t.Fatalf("MCP search did not find the REST write: %v", res)
	}

	// ...and by pgm search.
	cliEnv := []string{"PGM_API_URL=" + srv.URL, "PGM_API_KEY=" + rw}
	out, errOut, exit := runCLI(t, "pgm", cliEnv, "", "search", "OPS-7731", "--json")
	if exit != 0 || !strings.Contains(out, id) {
		t.Fatalf("pgm search: exit %d\n%s\n%s", exit, out, errOut)
	}

	// A key without write scope gets 403 on REST, FORBIDDEN on MCP and exit 5 in pgm.
	ro, _ := newKey(t, admin, postgram.KeySpec{Name: "reader", Scopes: []postgram.Scope{postgram.ScopeRead}})
	code, body = api(t, "POST", srv.URL+"/api/entities", ro, map[string]any{"type": "memory", "content": "nope"})
	if code != 403 || errCode(body) != "FORBIDDEN" {
		t.Fatalf("read-only store: %d %v", code, body)
	}
	isErr, res = toolCall(t, mcpClient(t, srv.URL, ro), "store", map[string]any{"type": "memory", "content": "nope"})
	if !isErr || errCode(res) != "FORBIDDEN" {
		t.Fatalf("read-only MCP store: %v %v", isErr, res)
	}
	if _, _, exit := runCLI(t, "pgm", []string{"PGM_API_URL=" + srv.URL, "PGM_API_KEY=" + ro}, "", "store", "nope"); exit != 5 {
		t.Fatalf("read-only pgm store exit %d, want 5", exit)
	}

	// A key limited to personal visibility never sees work entities.
	code, body = api(t, "POST", srv.URL+"/api/entities", rw, map[string]any{
		"type": "document", "content": "Work roadmap mentions zeppelin", "visibility": "work"})
	if code != 201 {
		t.Fatalf("store work doc: %d %v", code, body)
	}
	workID := body["entity"].(map[string]any)["id"].(string)
	code, body = api(t, "POST", srv.URL+"/api/entities", rw, map[string]any{
		"type": "memory", "content": "Personal note about a zeppelin ride", "visibility": "personal"})
	if code != 201 {
		t.Fatalf("store personal: %d", code)
	}
	personalID := body["entity"].(map[string]any)["id"].(string)
	pk, _ := newKey(t, admin, postgram.KeySpec{Name: "personal", Scopes: []postgram.Scope{postgram.ScopeRead},
		AllowedVisibilities: []postgram.Visibility{postgram.VisibilityPersonal}})
	if code, _ := api(t, "GET", srv.URL+"/api/entities/"+workID, pk, nil); code != 404 {
		t.Fatalf("personal key GET work entity: %d", code)
	}
	_, list := api(t, "GET", srv.URL+"/api/entities?limit=100", pk, nil)
	if s := fmt.Sprint(list); strings.Contains(s, workID) || !strings.Contains(s, personalID) {
		t.Fatalf("personal key list: %v", list)
	}
	_, found := api(t, "POST", srv.URL+"/api/search", pk, map[string]any{"query": "zeppelin"})
	if s := fmt.Sprint(found); strings.Contains(s, workID) || !strings.Contains(s, personalID) {
		t.Fatalf("personal key search: %v", found)
	}

	// A key limited to types never sees others.
	tk, _ := newKey(t, admin, postgram.KeySpec{Name: "docs", Scopes: []postgram.Scope{postgram.ScopeRead},
		AllowedTypes: []postgram.EntityType{postgram.TypeDocument}})
	_, found = api(t, "POST", srv.URL+"/api/search", tk, map[string]any{"query": "zeppelin"})
	if s := fmt.Sprint(found); !strings.Contains(s, workID) || strings.Contains(s, personalID) {
		t.Fatalf("type-limited key search: %v", found)
	}
	if code, _ := api(t, "GET", srv.URL+"/api/entities/"+id, tk, nil); code != 404 {
		t.Fatalf("type-limited key GET memory: %d", code)
	}

	// A 409 round trip through the CLI: update with a stale version.
	out, errOut, exit = runCLI(t, "pgm", cliEnv, "", "update", id, "--version", "1", "--content", "first edit")
	if exit != 0 {
		t.Fatalf("pgm update: %d %s %s", exit, out, errOut)
	}
	out, errOut, exit = runCLI(t, "pgm", cliEnv, "", "update", id, "--version", "1", "--content", "stale edit")
	if exit != 7 || !strings.Contains(errOut, "2") {
		t.Fatalf("stale pgm update: exit %d, stderr %q (want 7 and the current version 2)", exit, errOut)
	}
	code, body = api(t, "PATCH", srv.URL+"/api/entities/"+id, rw, map[string]any{"version": 1, "content": "stale"})
	if code != 409 || errCode(body) != "CONFLICT" || !strings.Contains(fmt.Sprint(body), "first edit") {
		t.Fatalf("REST 409 should carry details.current: %d %v", code, body)
	}

	// A revoked key gets 401 on its next request.
	_, rk := newKey(t, admin, postgram.KeySpec{Name: "short-lived", Scopes: []postgram.Scope{postgram.ScopeRead}})
	rtok, _ := newKey(t, admin, postgram.KeySpec{Name: "short-lived-2", Scopes: []postgram.Scope{postgram.ScopeRead}})
	_ = rk
	if code, _ := api(t, "GET", srv.URL+"/api/entities", rtok, nil); code != 200 {
		t.Fatalf("fresh key: %d", code)
	}
	keys, _ := postgramtest.Admin(t, admin).ListKeys(context.Background())
	for _, k := range keys {
		if k.Name == "short-lived-2" {
			if _, _, exit := runCLI(t, "pgm-admin", []string{"DATABASE_URL=" + dsn}, "", "key", "revoke", k.ID.String(), "--yes"); exit != 0 {
				t.Fatalf("pgm-admin key revoke exit %d", exit)
			}
		}
	}
	waitUnauthorized(t, srv.URL, rtok)

	// Unknown route and wrong method get the envelope.
	if code, body := api(t, "GET", srv.URL+"/api/nope", rw, nil); code != 404 || errCode(body) != "NOT_FOUND" {
		t.Fatalf("unknown route: %d %v", code, body)
	}
	if code, body := api(t, "PUT", srv.URL+"/api/search", rw, map[string]any{}); code != 405 || errCode(body) != "METHOD_NOT_ALLOWED" {
		t.Fatalf("wrong method: %d %v", code, body)
	}
	// The audit log recorded the writes with the key.
	entries, err := postgramtest.Admin(t, admin).Audit(context.Background(), postgram.AuditFilter{Operation: "entity.store"})
	if err != nil || len(entries) < 3 || entries[0].KeyID == "" {
		t.Fatalf("audit: %v %+v", err, entries)
	}
	out, _, exit = runCLI(t, "pgm-admin", []string{"DATABASE_URL=" + dsn}, "", "audit", "--operation", "key.revoke")
	if exit != 0 || !strings.Contains(out, "key.revoke") {
		t.Fatalf("pgm-admin audit: %d %s", exit, out)
	}
}

// waitUnauthorized checks that a revoked key is refused. The revocation
// reaches the server through LISTEN/NOTIFY; its delivery takes about a
// millisecond, so the first request after pgm-admin returns is allowed that
// long to see it.
func waitUnauthorized(t *testing.T, base, key string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		code, body := api(t, "GET", base+"/api/entities", key, nil)
		if code == 401 && errCode(body) == "UNAUTHORIZED" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("revoked key still accepted after 2s: %d", code)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// TestTwoReplicas runs two servers on one database: each sees the other's
// writes at once, every entity is embedded exactly once, and a key revoked
// through one is refused by both.
func TestTwoReplicas(t *testing.T) {
	t.Parallel()
	dsn := freshDSN(t)
	admin := adminClient(t, dsn)
	a := startServer(t, dsn)
	b := startServer(t, dsn)
	key, k := newKey(t, admin, postgram.KeySpec{Name: "both", Scopes: postgram.AllScopes})
	var ids []string
	for i := 0; i < 40; i++ {
		target := a
		if i%2 == 1 {
			target = b
		}
		code, body := api(t, "POST", target.URL+"/api/entities", key, map[string]any{"type": "memory",
			"content": fmt.Sprintf("replica note %d about walruses", i)})
		if code != 201 {
			t.Fatalf("store on replica: %d %v", code, body)
		}
		id := body["entity"].(map[string]any)["id"].(string)
		ids = append(ids, id)
		other := b
		if target == b {
			other = a
		}
		if code, _ := api(t, "GET", other.URL+"/api/entities/"+id, key, nil); code != 200 {
			t.Fatalf("replica did not see the other's write at once: %d", code)
		}
	}
	// Both workers share the queue: wait until everything is embedded.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, q := api(t, "GET", a.URL+"/api/queue", key, nil)
		emb := q["embedding"].(map[string]any)
		if emb["pending"].(float64) == 0 && emb["completed"].(float64) >= 40 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue did not drain: %v", q)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Exactly once: the two workers' "embedded" log lines add up to 40
	// entities, and every chunk has its embedding. A worker logs its batch
	// just after the batch commits, so the queue can report it drained a
	// moment before the last line is written: wait for the lines, and then
	// a little longer to catch a duplicate.
	embedded := func() int {
		total := 0
		for _, s := range []*server{a, b} {
			for _, line := range strings.Split(s.stderr.String(), "\n") {
				var l struct {
					Msg      string `json:"msg"`
					Entities int    `json:"entities"`
				}
				if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "embedded" {
					total += l.Entities
				}
			}
		}
		return total
	}
	for logDeadline := time.Now().Add(5 * time.Second); embedded() < 40 && time.Now().Before(logDeadline); {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if total := embedded(); total != 40 {
		t.Fatalf("the replicas embedded %d entities in total, want exactly 40", total)
	}
	st, err := postgramtest.Admin(t, admin).Stats(context.Background())
	if err != nil || st.EmbeddedChunks != 40 || st.Chunks != 40 {
		t.Fatalf("stats: %v %+v", err, st)
	}
	// Revoke through replica a's store (pgm-admin): both refuse the key.
	if err := postgramtest.Admin(t, admin).RevokeKey(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
	waitUnauthorized(t, a.URL, key)
	waitUnauthorized(t, b.URL, key)

	// A key narrowed, then deleted, by plain SQL (not through the library)
	// is seen by both replicas at once: the api_keys trigger notifies them.
	key2, k2 := newKey(t, admin, postgram.KeySpec{Name: "by-sql", Scopes: postgram.AllScopes})
	for _, s := range []*server{a, b} {
		if code, _ := api(t, "POST", s.URL+"/api/entities", key2, map[string]any{"type": "memory", "content": "before"}); code != 201 {
			t.Fatalf("write before the SQL change: %d", code)
		}
	}
	pool := postgramtest.Admin(t, admin).Storage().(*postgres.Store).Pool()
	if _, err := pool.Exec(context.Background(), `UPDATE api_keys SET scopes = '{read}' WHERE id = $1`, k2.ID); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*server{a, b} {
		deadline := time.Now().Add(2 * time.Second)
		for {
			code, body := api(t, "POST", s.URL+"/api/entities", key2, map[string]any{"type": "memory", "content": "after"})
			if code == 403 && errCode(body) == "FORBIDDEN" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a key narrowed by SQL still writes after 2s: %d", code)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, err := pool.Exec(context.Background(), `DELETE FROM api_keys WHERE id = $1`, k2.ID); err != nil {
		t.Fatal(err)
	}
	waitUnauthorized(t, a.URL, key2)
	waitUnauthorized(t, b.URL, key2)
}
