package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/cmd/internal/config"
	"github.com/postgram-go/postgram/transport/apierror"
)

// admin runs pgm-admin's run() with vars as its whole environment.
func admin(t *testing.T, vars map[string]string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	get := func(k string) string { return vars[k] }
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb, get)
	return out.String(), errb.String(), code
}

func mustAdmin(t *testing.T, vars map[string]string, stdin string, args ...string) string {
	t.Helper()
	out, errs, code := admin(t, vars, stdin, args...)
	if code != 0 {
		t.Fatalf("pgm-admin %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

func TestSQLiteStoreMustExist(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	vars := map[string]string{"POSTGRAM_DATA_DIR": dir, "LOG_LEVEL": "error"}
	for _, args := range [][]string{{"key", "list"}, {"stats"}, {"audit"}, {"sql", "SELECT 1"}} {
		_, errs, code := admin(t, vars, "", args...)
		if code != apierror.ExitUnreachable || !strings.Contains(errs, "no Postgram store at "+filepath.Join(dir, config.SQLiteFile)) ||
			!strings.Contains(errs, "pgm-admin migrate") {
			t.Fatalf("%v on a missing store: exit %d, %s", args, code, errs)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a read command created the data directory: %v", err)
	}
	// An empty (unmigrated) database is refused with the same advice.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, config.SQLiteFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, errs, code := admin(t, vars, "", "key", "list")
	if code != apierror.ExitUnreachable || !strings.Contains(errs, "schema version 0 of") {
		t.Fatalf("unmigrated store: exit %d, %s", code, errs)
	}
}

// TestSQLiteAdmin runs every pgm-admin command against the embedded store
// the server would use with the same variables.
func TestSQLiteAdmin(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	// Only HOME: the XDG default directory, as for the server.
	vars := map[string]string{"HOME": home, "LOG_LEVEL": "error"}
	path := filepath.Join(home, ".local", "share", "postgram", config.SQLiteFile)

	out := mustAdmin(t, vars, "", "migrate")
	if !strings.HasPrefix(out, "schema is at version ") || !strings.Contains(out, path) {
		t.Fatalf("migrate: %q", out)
	}
	mustAdmin(t, vars, "", "migrate") // idempotent

	// What the server would have written: an entity through the library.
	ctx := context.Background()
	env, err := config.Parse(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	st, err := env.OpenStore(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c, err := postgram.New(ctx, env.ClientConfig(st, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "The SQLite store is the default"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	token := strings.TrimSpace(mustAdmin(t, vars, "", "key", "create", "ci", "--scopes", "read,write"))
	if !strings.HasPrefix(token, "pgm") {
		t.Fatalf("key create printed %q", token)
	}
	var listed struct {
		Keys []postgram.APIKey `json:"keys"`
	}
	if err := json.Unmarshal([]byte(mustAdmin(t, vars, "", "key", "list", "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed.Keys) != 1 || listed.Keys[0].Name != "ci" ||
		!cmp.Equal(listed.Keys[0].Scopes, []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}) {
		t.Fatalf("key list: %+v", listed.Keys)
	}
	id := listed.Keys[0].ID.String()
	if out := mustAdmin(t, vars, "", "key", "list"); !strings.Contains(out, id) || !strings.Contains(out, "read,write") {
		t.Fatalf("key list table: %s", out)
	}

	// sql: SELECT as TSV and JSON, DML from stdin with the affected rows.
	out = mustAdmin(t, vars, "", "sql", "SELECT name, scopes, revoked_at FROM api_keys ORDER BY name")
	if want := "name\tscopes\trevoked_at\nci\t[\"read\",\"write\"]\t\\N\n"; out != want {
		t.Fatalf("sql SELECT:\n%q\nwant\n%q", out, want)
	}
	var rows struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal([]byte(mustAdmin(t, vars, "", "sql", "--json", "SELECT count(*) AS n, 'x' AS s FROM entities")), &rows); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]map[string]any{{"n": float64(1), "s": "x"}}, rows.Rows); diff != "" {
		t.Fatalf("sql --json (-want +got):\n%s", diff)
	}
	out = mustAdmin(t, vars, "-- rename it\nUPDATE api_keys SET name = 'ci-renamed' WHERE name = 'ci';\n", "sql")
	if out != "UPDATE (1 rows affected)\n" {
		t.Fatalf("sql UPDATE: %q", out)
	}
	var dml map[string]any
	if err := json.Unmarshal([]byte(mustAdmin(t, vars, "", "sql", "--json", "DELETE FROM api_keys WHERE name = 'nobody'")), &dml); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"command": "DELETE", "rows_affected": float64(0)}, dml); diff != "" {
		t.Fatalf("sql --json DELETE (-want +got):\n%s", diff)
	}
	if out := mustAdmin(t, vars, "", "sql", "CREATE TABLE scratch (x)"); out != "CREATE (0 rows affected)\n" {
		t.Fatalf("sql CREATE: %q", out)
	}
	if _, errs, code := admin(t, vars, "", "sql", "SELECT * FROM no_such_table"); code != apierror.ExitInternal || !strings.Contains(errs, "no such table") {
		t.Fatalf("bad SQL: exit %d, %s", code, errs)
	}
	if _, _, code := admin(t, vars, "  \n", "sql"); code != apierror.ExitUsage {
		t.Fatalf("empty statement: exit %d", code)
	}

	// revoke needs --yes; then the key is revoked.
	if out, _, code := admin(t, vars, "", "key", "revoke", id); code != apierror.ExitUsage || !strings.Contains(out, "would revoke") {
		t.Fatalf("revoke without --yes: exit %d, %q", code, out)
	}
	if out := mustAdmin(t, vars, "", "key", "revoke", id, "--yes"); out != "revoked key "+id+"\n" {
		t.Fatalf("revoke: %q", out)
	}
	if err := json.Unmarshal([]byte(mustAdmin(t, vars, "", "key", "list", "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed.Keys) != 1 || listed.Keys[0].Name != "ci-renamed" || listed.Keys[0].RevokedAt == nil {
		t.Fatalf("after revoke: %+v", listed.Keys)
	}

	// audit: the key's creation and revocation and every SQL statement.
	var audit struct {
		Entries []postgram.AuditEntry `json:"entries"`
	}
	if err := json.Unmarshal([]byte(mustAdmin(t, vars, "", "audit", "--json", "--since", "1h")), &audit); err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for _, e := range audit.Entries {
		ops[e.Operation]++
	}
	if ops["key.create"] != 1 || ops["key.revoke"] != 1 || ops["admin.sql"] != 6 || ops["entity.store"] != 1 {
		t.Fatalf("audit operations: %v", ops)
	}
	if out := mustAdmin(t, vars, "", "audit", "--operation", "key.revoke"); !strings.Contains(out, "key.revoke") || strings.Contains(out, "key.create") {
		t.Fatalf("audit --operation: %s", out)
	}

	// stats.
	out = mustAdmin(t, vars, "", "stats")
	for _, want := range []string{"workspace", "entities", "1", "chunks", "api keys", "database size"} {
		if !strings.Contains(out, want) {
			t.Fatalf("stats lacks %q:\n%s", want, out)
		}
	}
	var stats struct {
		Stats postgram.StoreStats `json:"stats"`
	}
	if err := json.Unmarshal([]byte(mustAdmin(t, vars, "", "stats", "--json")), &stats); err != nil {
		t.Fatal(err)
	}
	if stats.Stats.Entities != 1 || stats.Stats.Keys != 1 || stats.Stats.DatabaseBytes <= 0 {
		t.Fatalf("stats --json: %+v", stats.Stats)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the store is not at the XDG default: %v", err)
	}
}
