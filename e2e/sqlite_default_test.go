package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bootstrapToken returns the admin key postgram-server created on the
// first start of an empty store. Its stderr is not a terminal, so the key
// is in a 0600 file and never in the log stream.
func bootstrapToken(t *testing.T, s *server) string {
	t.Helper()
	fi, err := os.Stat(s.KeyFile)
	if err != nil {
		t.Fatalf("no bootstrap key file: %v\n%s", err, s.stderr.String())
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("bootstrap key file mode %v, want 0600", fi.Mode().Perm())
	}
	b, err := os.ReadFile(s.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(b))
	if !strings.HasPrefix(key, "pgm-") {
		t.Fatalf("bootstrap key file holds %q", key)
	}
	if log := s.stderr.String(); strings.Contains(log, key) || !strings.Contains(log, s.KeyFile) {
		t.Fatalf("the log must name the key file and never show the key:\n%s", log)
	}
	return key
}

// storeOpenedLine returns the fields of the server's "store opened" log line.
func storeOpenedLine(t *testing.T, log string) map[string]any {
	t.Helper()
	for _, l := range strings.Split(log, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "store opened" {
			return m
		}
	}
	t.Fatalf("no \"store opened\" line in the server's log:\n%s", log)
	return nil
}

// TestSQLiteDefault runs the real server the way the README's run command
// does: no DATABASE_URL and no embedding provider. It must use the
// embedded store in POSTGRAM_DATA_DIR, print a bootstrap key, answer
// keyword searches at once, and find the data again after a restart.
func TestSQLiteDefault(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := []string{"POSTGRAM_DATA_DIR=" + dir, "EMBEDDING_PROVIDER=", "OPENAI_API_KEY=", "EMBEDDING_DIMENSIONS="}
	srv := startServer(t, "", env...)
	log := srv.stderr.String()
	if got := storeOpenedLine(t, log); got["backend"] != "sqlite" || got["path"] != filepath.Join(dir, "postgram.db") || got["sync"] != "full" {
		t.Fatalf("store opened: %v", got)
	}
	key := bootstrapToken(t, srv)

	// No embedder: health says the vector branch is off, the store is fine.
	code, health := api(t, "GET", srv.URL+"/health", "", nil)
	emb, _ := health["embedding"].(map[string]any)
	store, _ := health["store"].(map[string]any)
	if code != 200 || health["status"] != "degraded" || emb["state"] != "disabled" || store["name"] != "sqlite" || store["state"] != "ok" {
		t.Fatalf("health: %d %v", code, health)
	}

	code, body := api(t, "POST", srv.URL+"/api/entities", key, map[string]any{
		"type": "memory", "content": "Ticket SQL-4242: the embedded store needs no database server", "tags": []string{"setup"}})
	if code != 201 {
		t.Fatalf("store: %d %v", code, body)
	}
	id := body["entity"].(map[string]any)["id"].(string)

	search := func(s *server) map[string]any {
		t.Helper()
		code, res := api(t, "POST", s.URL+"/api/search", key, map[string]any{"query": "SQL-4242"})
		if code != 200 || !strings.Contains(fmt.Sprint(res["results"]), id) {
			t.Fatalf("search SQL-4242: %d %v", code, res)
		}
		if !strings.Contains(fmt.Sprint(res["degraded"]), "vector") {
			t.Fatalf("a search without embedder should say degraded vector: %v", res["degraded"])
		}
		return res
	}
	search(srv) // the keyword branch finds the write at once

	// pgm-admin, with the same variables, works on the same file while the
	// server runs.
	out, errOut, exit := runCLI(t, "pgm-admin", append(env, "LOG_LEVEL=error"), "", "key", "list")
	if exit != 0 || !strings.Contains(out, "bootstrap-admin") {
		t.Fatalf("pgm-admin key list: exit %d\n%s\n%s", exit, out, errOut)
	}
	out, errOut, exit = runCLI(t, "pgm-admin", append(env, "LOG_LEVEL=error"), "", "sql", "SELECT count(*) AS n FROM entities")
	if exit != 0 || out != "n\n1\n" {
		t.Fatalf("pgm-admin sql: exit %d\n%q\n%s", exit, out, errOut)
	}

	// Restart on the same directory: same key, same entity, no new key.
	srv.stop(t)
	srv2 := startServer(t, "", env...)
	if strings.Contains(srv2.stderr.String(), "bootstrap admin key") {
		t.Fatalf("the second start created another bootstrap key:\n%s", srv2.stderr.String())
	}
	code, body = api(t, "GET", srv2.URL+"/api/entities/"+id, key, nil)
	if code != 200 {
		t.Fatalf("get after restart: %d %v", code, body)
	}
	search(srv2)
}
