package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
)

// TestExportImport runs pgm-admin export and import as a user would:
// SQLite → file → PostgreSQL → standard output → standard input → SQLite,
// then checks the copies and the errors for a repeated import.
func TestExportImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sqliteVars := map[string]string{"POSTGRAM_DATA_DIR": filepath.Join(t.TempDir(), "a"), "LOG_LEVEL": "error"}
	mustAdmin(t, sqliteVars, "", "migrate")

	// Content written through the library, as the server would.
	c, st := serverClient(t, sqliteVars, postgramtest.NewEmbedder(32))
	var ids []string
	for i, content := range []string{"The ledger ABC-1234 moved to PostgreSQL", "Ada Lovelace, analyst", strings.Repeat("long notes on the migration ", 80)} {
		e, err := c.Store(ctx, postgram.StoreInput{Type: postgram.EntityTypes[i], Content: content, Tags: []string{"moving"},
			Metadata: map[string]any{"step": float64(i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID.String())
	}
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	e0, e1 := mustParse(t, ids[0]), mustParse(t, ids[1])
	if _, err := c.Link(ctx, postgram.LinkInput{SourceID: e0, TargetID: e1, Relation: "owned_by"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	file := filepath.Join(t.TempDir(), "export.jsonl")
	out := mustAdmin(t, sqliteVars, "", "export", "--out", file)
	if !strings.Contains(out, "3 entities") || !strings.Contains(out, "1 edges") {
		t.Fatalf("export summary: %q", out)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n != 1+3+1+1 {
		t.Fatalf("export has %d lines", n)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".export.jsonl.partial-*")); len(left) != 0 {
		t.Fatalf("partial files left: %v", left)
	}

	pgVars := map[string]string{"DATABASE_URL": pgtest.Schema(t), "LOG_LEVEL": "error"}
	mustAdmin(t, pgVars, "", "migrate")
	var res struct {
		Stats struct {
			Entities   int `json:"entities"`
			Edges      int `json:"edges"`
			Embeddings int `json:"embeddings"`
			Pending    int `json:"pending"`
		} `json:"stats"`
	}
	if err := json.Unmarshal([]byte(mustAdmin(t, pgVars, "", "import", "--in", file, "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if res.Stats.Entities != 3 || res.Stats.Edges != 1 || res.Stats.Embeddings < 3 || res.Stats.Pending != 0 {
		t.Fatalf("import stats: %+v", res.Stats)
	}
	// The same file again: refused, naming the line; --skip-existing skips.
	_, errs, code := admin(t, pgVars, "", "import", "--in", file)
	if code == 0 || !strings.Contains(errs, "line 2") || !strings.Contains(errs, "already exists") || !strings.Contains(errs, "--skip-existing") {
		t.Fatalf("repeated import: exit %d, %s", code, errs)
	}
	if out := mustAdmin(t, pgVars, "", "import", "--in", file, "--skip-existing"); !strings.Contains(out, "skipped 3 existing entities and 1 existing edges") {
		t.Fatalf("import --skip-existing: %q", out)
	}
	// A garbage file: a usage error naming the line.
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	lines := strings.SplitAfter(string(data), "\n")
	if err := os.WriteFile(bad, []byte(lines[0]+lines[1]+"garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := admin(t, pgVars, "", "import", "--in", bad); code != 2 || !strings.Contains(errs, "line 3: ") {
		t.Fatalf("garbage import: exit %d, %s", code, errs)
	}

	// PostgreSQL → stdout → stdin → a second SQLite store.
	var pgOut, pgErr bytes.Buffer
	if code := run(ctx, []string{"export", "--no-embeddings"}, strings.NewReader(""), &pgOut, &pgErr, func(k string) string { return pgVars[k] }); code != 0 {
		t.Fatalf("export from postgres: %d %s", code, pgErr.String())
	}
	if !strings.Contains(pgErr.String(), "exported workspace default: 3 entities") || bytes.Contains(pgOut.Bytes(), []byte(`"embedding"`)) {
		t.Fatalf("export to stdout: stderr %q", pgErr.String())
	}
	bVars := map[string]string{"POSTGRAM_DATA_DIR": filepath.Join(t.TempDir(), "b"), "LOG_LEVEL": "error"}
	mustAdmin(t, bVars, "", "migrate")
	if out := mustAdmin(t, bVars, pgOut.String(), "import"); !strings.Contains(out, "3 entities, 1 edges") || !strings.Contains(out, "3 entities queued") {
		t.Fatalf("import from stdin: %q", out)
	}
	again := mustAdmin(t, bVars, "", "export", "--no-embeddings")
	_, a, _ := strings.Cut(pgOut.String(), "\n")
	_, b, _ := strings.Cut(again, "\n")
	// Imported without embeddings, the copy's entities wait for its worker.
	a = strings.ReplaceAll(a, `"enrichment_status":"completed"`, `"enrichment_status":"pending"`)
	if a != b {
		t.Fatalf("the second SQLite store exports differently from PostgreSQL:\n%s\nvs\n%s", a, b)
	}
	// The audit logs record both acts.
	if out := mustAdmin(t, pgVars, "", "audit", "--operation", "admin.import"); strings.Count(out, "admin.import") != 2 {
		t.Fatalf("audit: %s", out)
	}
}

func mustParse(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := postgram.ParseID("id", s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
