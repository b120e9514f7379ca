package config

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
)

func env(vars map[string]string) Getenv { return func(k string) string { return vars[k] } }

func TestDataDir(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"explicit", map[string]string{"POSTGRAM_DATA_DIR": "/srv/pg/", "XDG_DATA_HOME": "/x", "HOME": "/home/u"}, "/srv/pg"},
		{"xdg", map[string]string{"XDG_DATA_HOME": "/x/data", "HOME": "/home/u"}, "/x/data/postgram"},
		{"relative xdg is ignored", map[string]string{"XDG_DATA_HOME": "data", "HOME": "/home/u"}, "/home/u/.local/share/postgram"},
		{"home", map[string]string{"HOME": "/home/u"}, "/home/u/.local/share/postgram"},
		{"nothing", map[string]string{}, ""},
	}
	for _, c := range cases {
		e, err := Parse(env(c.vars))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if e.DataDir != c.want {
			t.Errorf("%s: DataDir = %q, want %q", c.name, e.DataDir, c.want)
		}
		wantPath := ""
		if c.want != "" {
			wantPath = filepath.Join(c.want, SQLiteFile)
		}
		if got := e.SQLitePath(); got != wantPath {
			t.Errorf("%s: SQLitePath = %q, want %q", c.name, got, wantPath)
		}
	}
	e, err := Parse(env(map[string]string{"HOME": "/home/u", "DATABASE_URL": "postgres://u@h/db"}))
	if err != nil {
		t.Fatal(err)
	}
	if e.SQLitePath() != "" {
		t.Errorf("SQLitePath with DATABASE_URL = %q, want empty", e.SQLitePath())
	}
}

func TestSQLiteSync(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{"": true, "full": true, "FULL": true, " normal ": false} {
		e, err := Parse(env(map[string]string{"POSTGRAM_SQLITE_SYNC": v}))
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if e.SQLiteDurable != want {
			t.Errorf("POSTGRAM_SQLITE_SYNC=%q: durable %v, want %v", v, e.SQLiteDurable, want)
		}
	}
	_, err := Parse(env(map[string]string{"POSTGRAM_SQLITE_SYNC": "off"}))
	if err == nil || !strings.Contains(err.Error(), "POSTGRAM_SQLITE_SYNC") {
		t.Fatalf("POSTGRAM_SQLITE_SYNC=off: %v, want an error naming the variable", err)
	}
}

func TestDefaultEmbedderNeedsNoNetwork(t *testing.T) {
	t.Parallel()
	e, err := Parse(env(map[string]string{"HOME": "/home/u"}))
	if err != nil {
		t.Fatal(err)
	}
	if e.EmbeddingProvider != "none" {
		t.Fatalf("default provider %q, want none", e.EmbeddingProvider)
	}
	emb, err := e.Embedder()
	if err != nil || emb != nil {
		t.Fatalf("default embedder = %v, %v; want none", emb, err)
	}
	e, err = Parse(env(map[string]string{"OPENAI_API_KEY": "sk-x"}))
	if err != nil || e.EmbeddingProvider != "openai" || e.EmbeddingAPIKey != "sk-x" {
		t.Fatalf("with OPENAI_API_KEY: %+v, %v", e, err)
	}
}

func TestRedactDSN(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"postgres://user:secret@db:5432/pg?sslmode=disable":       "postgres://user:xxxxx@db:5432/pg?sslmode=disable",
		"postgresql://user@db/pg?password=secret&sslmode=require": "postgresql://user@db/pg?password=xxxxx&sslmode=require",
		"postgres://user@db/pg":                                   "postgres://user@db/pg",
		"host=db user=u password=secret dbname=pg":                "host=db user=u password=xxxxx dbname=pg",
		"host=db password='se cr\\'et' dbname=pg":                 "host=db password=xxxxx dbname=pg",
	}
	for in, want := range cases {
		if got := RedactDSN(in); got != want {
			t.Errorf("RedactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}

// logLines decodes JSON log lines.
func logLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func storeOpened(t *testing.T, b *bytes.Buffer) map[string]any {
	t.Helper()
	for _, m := range logLines(t, b) {
		if m["msg"] == "store opened" {
			delete(m, "time")
			delete(m, "level")
			return m
		}
	}
	t.Fatalf("no \"store opened\" log line in:\n%s", b.String())
	return nil
}

func TestOpenStoreSQLiteDefault(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	e, err := Parse(env(map[string]string{"HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	ctx := context.Background()
	st, err := e.OpenStore(ctx, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Name() != "sqlite" {
		t.Fatalf("store %q, want sqlite", st.Name())
	}
	want := filepath.Join(home, ".local", "share", "postgram", SQLiteFile)
	if diff := cmp.Diff(map[string]any{"msg": "store opened", "backend": "sqlite", "path": want, "sync": "full"}, storeOpened(t, &logs)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	m, ok := st.(Migrator)
	if !ok {
		t.Fatal("the sqlite store is not a Migrator")
	}
	if err := m.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := postgram.New(ctx, e.ClientConfig(st, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := postgramtest.Admin(t, c).CreateKey(ctx, postgram.KeySpec{Name: "k", Scopes: postgram.AllScopes}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Dir(want))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data directory: %v, %v; want mode 0700", fi, err)
	}
}

func TestOpenStoreSQLiteNormalSync(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nested", "data")
	e, err := Parse(env(map[string]string{"POSTGRAM_DATA_DIR": dir, "POSTGRAM_SQLITE_SYNC": "normal"}))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	st, err := e.OpenStore(context.Background(), slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got := storeOpened(t, &logs)
	if got["path"] != filepath.Join(dir, SQLiteFile) || got["sync"] != "normal" {
		t.Fatalf("log %v", got)
	}
	if d := e.StoreDescription(); d != "sqlite "+filepath.Join(dir, SQLiteFile) {
		t.Fatalf("StoreDescription = %q", d)
	}
}

func TestOpenStoreErrors(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	e, err := Parse(env(map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.OpenStore(context.Background(), log); err == nil || !strings.Contains(err.Error(), "POSTGRAM_DATA_DIR") {
		t.Fatalf("no HOME and no data dir: %v", err)
	}
	// A data directory that cannot be created (a file is in the way).
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err = Parse(env(map[string]string{"POSTGRAM_DATA_DIR": filepath.Join(file, "sub")}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.OpenStore(context.Background(), log); err == nil || !strings.Contains(err.Error(), "POSTGRAM_DATA_DIR") {
		t.Fatalf("uncreatable data dir: %v", err)
	}
	// A file that is not a database is left untouched.
	dir := t.TempDir()
	junk := []byte("not a database, but my notes")
	if err := os.WriteFile(filepath.Join(dir, SQLiteFile), junk, 0o600); err != nil {
		t.Fatal(err)
	}
	e, err = Parse(env(map[string]string{"POSTGRAM_DATA_DIR": dir}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.OpenStore(context.Background(), log); err == nil || !strings.Contains(err.Error(), "not a SQLite database") {
		t.Fatalf("junk file: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, SQLiteFile)); !bytes.Equal(b, junk) {
		t.Fatal("the junk file was modified")
	}
}

func TestOpenStorePostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	e, err := Parse(env(map[string]string{"DATABASE_URL": dsn, "HOME": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	st, err := e.OpenStore(context.Background(), slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Name() != "postgres" {
		t.Fatalf("store %q, want postgres", st.Name())
	}
	got := storeOpened(t, &logs)
	if got["backend"] != "postgres" || got["dsn"] != RedactDSN(dsn) {
		t.Fatalf("log %v", got)
	}
	if !strings.HasPrefix(e.StoreDescription(), "postgres ") {
		t.Fatalf("StoreDescription = %q", e.StoreDescription())
	}
}

func TestDatabaseReadURLs(t *testing.T) {
	t.Parallel()
	e, err := Parse(env(map[string]string{"DATABASE_URL": "postgres://u:secret@primary/db",
		"DATABASE_READ_URLS": " postgres://u:secret@r1/db , ,postgres://u:secret@r2/db"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"postgres://u:secret@r1/db", "postgres://u:secret@r2/db"}; !slices.Equal(e.DatabaseReadURLs, want) {
		t.Errorf("DatabaseReadURLs = %q, want %q", e.DatabaseReadURLs, want)
	}
	for _, st := range e.Settings() {
		if st.Name == "DATABASE_READ_URLS" && (strings.Contains(st.Value, "secret") || !strings.Contains(st.Value, "r2")) {
			t.Errorf("settings show %q", st.Value)
		}
	}
	_, err = Parse(env(map[string]string{"DATABASE_READ_URLS": "postgres://r1/db"}))
	if err == nil || !strings.Contains(err.Error(), "DATABASE_READ_URLS") {
		t.Fatalf("replicas without DATABASE_URL: %v, want an error naming the variable", err)
	}
}

func TestDatabaseVectorIndex(t *testing.T) {
	t.Parallel()
	e, err := Parse(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if e.DatabaseVectorIndex != "hnsw" || e.DatabaseRerankCandidates != 400 || e.DatabaseEfSearch != 40 || e.DatabaseMemoryIndex {
		t.Errorf("defaults: %q %d %d %v", e.DatabaseVectorIndex, e.DatabaseRerankCandidates, e.DatabaseEfSearch, e.DatabaseMemoryIndex)
	}
	if e.DatabaseMemoryIndexHalf {
		t.Error("DATABASE_MEMORY_INDEX_HALF defaults to true")
	}
	e, err = Parse(env(map[string]string{"DATABASE_VECTOR_INDEX": " Binary ", "DATABASE_RERANK_CANDIDATES": "800", "DATABASE_MEMORY_INDEX": "true",
		"DATABASE_MEMORY_INDEX_HALF": "true", "DATABASE_MEMORY_INDEX_CANDIDATES": "20000"}))
	if err != nil {
		t.Fatal(err)
	}
	if e.DatabaseVectorIndex != "binary" || e.DatabaseRerankCandidates != 800 || !e.DatabaseMemoryIndex || !e.DatabaseMemoryIndexHalf ||
		e.DatabaseMemoryIndexCandidates != 20000 {
		t.Errorf("set: %q %d %v", e.DatabaseVectorIndex, e.DatabaseRerankCandidates, e.DatabaseMemoryIndex)
	}
	if e, err = Parse(env(map[string]string{"DATABASE_VECTOR_INDEX": "none"})); err != nil || e.DatabaseVectorIndex != "none" {
		t.Errorf("DATABASE_VECTOR_INDEX=none: %v", err)
	}
	for name, v := range map[string]string{"DATABASE_VECTOR_INDEX": "ivfflat", "DATABASE_RERANK_CANDIDATES": "5000", "DATABASE_EF_SEARCH": "0",
		"DATABASE_MEMORY_INDEX": "sometimes", "DATABASE_MEMORY_INDEX_HALF": "2", "DATABASE_MEMORY_INDEX_CANDIDATES": "-1"} {
		if _, err := Parse(env(map[string]string{name: v})); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v, want an error naming the variable", name, v, err)
		}
	}
}

func TestEnrichmentBatchWait(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]time.Duration{"": 20 * time.Millisecond, "0": -1, "75": 75 * time.Millisecond} {
		e, err := Parse(env(map[string]string{"ENRICHMENT_BATCH_WAIT_MS": v}))
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if got := batchWait(e.BatchWait); got != want {
			t.Errorf("ENRICHMENT_BATCH_WAIT_MS=%q: worker waits %v, want %v", v, got, want)
		}
	}
	for _, v := range []string{"-1", "soon", "60001"} {
		if _, err := Parse(env(map[string]string{"ENRICHMENT_BATCH_WAIT_MS": v})); err == nil || !strings.Contains(err.Error(), "ENRICHMENT_BATCH_WAIT_MS") {
			t.Errorf("ENRICHMENT_BATCH_WAIT_MS=%s: %v, want an error naming the variable", v, err)
		}
	}
}
