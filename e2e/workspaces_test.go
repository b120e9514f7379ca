package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram/internal/pgtest"
)

// TestManyWorkspaces: one postgram-server, as the least-privilege app role,
// serves every workspace of its database. pgm-admin (as the same role)
// creates two workspaces with a key each; each key stores, searches and
// reads over REST and MCP in its own workspace only, the server's worker
// embeds both, and deleting one workspace while the server runs refuses its
// key at once and leaves the other alone.
func TestManyWorkspaces(t *testing.T) {
	t.Parallel()
	owner := freshDSN(t)
	app := pgtest.AppLogin(t, owner, "postgram_e2e_ws")
	s := startServer(t, app, "DATABASE_MIGRATION_URL="+owner)
	adminEnv := []string{"DATABASE_URL=" + app, "LOG_LEVEL=error"}
	keys := map[string]string{}
	for _, ws := range []string{"acme", "bravo"} {
		out, errOut, code := runCLI(t, "pgm-admin", adminEnv, "", "workspace", "create", ws)
		if code != 0 {
			t.Fatalf("pgm-admin workspace create %s: exit %d %s", ws, code, errOut)
		}
		keys[ws] = strings.TrimSpace(out)
	}
	ids := map[string]string{}
	for ws, key := range keys {
		code, body := api(t, "POST", s.URL+"/api/entities", key, map[string]any{"type": "memory", "content": ws + " keeps the walrus ledger"})
		if code != 201 {
			t.Fatalf("store in %s: %d %v\n%s", ws, code, body, s.stderr.String())
		}
		ids[ws] = body["entity"].(map[string]any)["id"].(string)
	}
	other := map[string]string{"acme": "bravo", "bravo": "acme"}
	for ws, key := range keys {
		if code, _ := api(t, "GET", s.URL+"/api/entities/"+ids[other[ws]], key, nil); code != 404 {
			t.Errorf("%s reads %s's entity: %d", ws, other[ws], code)
		}
		code, body := api(t, "POST", s.URL+"/api/search", key, map[string]any{"query": "walrus ledger"})
		res, _ := body["results"].([]any)
		if code != 200 || len(res) != 1 || res[0].(map[string]any)["entity"].(map[string]any)["id"] != ids[ws] {
			t.Errorf("%s's search: %d %v", ws, code, body)
		}
		isErr, sr := toolCall(t, mcpClient(t, s.URL, key), "search", map[string]any{"query": "walrus ledger"})
		rows, _ := sr["results"].([]any)
		if isErr || len(rows) != 1 || rows[0].(map[string]any)["id"] != ids[ws] {
			t.Errorf("%s's MCP search: %v", ws, sr)
		}
	}
	// The server runs a worker for each workspace.
	deadline := time.Now().Add(30 * time.Second)
	for ws, key := range keys {
		for {
			_, q := api(t, "GET", s.URL+"/api/queue", key, nil)
			if emb, _ := q["embedding"].(map[string]any); emb != nil && emb["completed"].(float64) >= 1 && emb["pending"].(float64) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s's entity was not embedded: %v", ws, q)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	out, errOut, code := runCLI(t, "pgm-admin", adminEnv, "", "workspace", "list")
	if code != 0 || !strings.Contains(out, "acme") || !strings.Contains(out, "bravo") || !strings.Contains(out, "default") {
		t.Fatalf("pgm-admin workspace list: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := runCLI(t, "pgm-admin", adminEnv, "", "workspace", "delete", "acme", "--yes"); code != 0 {
		t.Fatalf("pgm-admin workspace delete: %d %s", code, errOut)
	}
	waitUnauthorized(t, s.URL, keys["acme"])
	if code, _ := api(t, "GET", s.URL+"/api/entities/"+ids["bravo"], keys["bravo"], nil); code != 200 {
		t.Errorf("bravo after acme's delete: %d", code)
	}
}
