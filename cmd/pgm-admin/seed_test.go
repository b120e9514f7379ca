package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/transport/apierror"
)

// TestSeedExamples runs every pgm-admin example of the reference system's
// README, as written there (only the ./bin/ wrapper dropped and <uuid>,
// <model> and <id> filled in), against a real store on both backends,
// with the reference's variables: PGM_DATABASE_URL for PostgreSQL,
// LOG_LEVEL=fatal, LLM_REQUEST_TIMEOUT_MS and EXTRACTION_DISABLE_THINKING.
//
// Two deliberate differences (DESIGN.md §CLI wins over the reference):
// a command that deletes edges without --dry-run (prune-edges,
// validate-edges, reextract --clean-edges) needs --yes here, so the
// example as written exits 2 naming --yes and is then run with it; and
// raw SQL is the store's dialect, so on SQLite the example's PostgreSQL
// char_length is SQLite's length.
func TestSeedExamples(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name string
		vars func(t *testing.T) map[string]string
	}{
		{"sqlite", func(t *testing.T) map[string]string { return map[string]string{"POSTGRAM_DATA_DIR": t.TempDir()} }},
		{"postgres", func(t *testing.T) map[string]string { return map[string]string{"PGM_DATABASE_URL": pgtest.Schema(t)} }},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			vars := b.vars(t)
			for k, v := range map[string]string{
				"LOG_LEVEL": "fatal", "EMBEDDING_PROVIDER": "deterministic", "EMBEDDING_DIMENSIONS": "32",
				// Extraction is configured (validate-edges and promotion need
				// it) but never called: no example has work for the LLM.
				"EXTRACTION_ENABLED": "true", "EXTRACTION_PROVIDER": "ollama", "OLLAMA_BASE_URL": "http://127.0.0.1:9",
				"EXTRACTION_MODEL": "llama3.2", "LLM_REQUEST_TIMEOUT_MS": "300000", "EXTRACTION_DISABLE_THINKING": "true",
			} {
				vars[k] = v
			}
			testSeedExamples(t, vars)
		})
	}
}

func testSeedExamples(t *testing.T, vars map[string]string) {
	ctx := context.Background()
	mustAdmin(t, vars, "", "migrate")
	server := map[string]string{}
	for k, v := range vars {
		server[k] = v
	}
	if u := vars["PGM_DATABASE_URL"]; u != "" {
		server["DATABASE_URL"] = u // the server's name for it
	}
	c, st := serverClient(t, server, nil)
	doc, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeDocument, Content: "# Plan\nThe okapi project uses pgvector."})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "decided to use pgvector for the okapi project"}); err != nil {
		t.Fatal(err)
	}
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()

	lengthFn := "char_length"
	if vars["PGM_DATABASE_URL"] == "" {
		lengthFn = "length"
	}
	examples := []struct {
		cmd   string
		stdin string
		want  string // in stdout
		// needsYes: the reference applies it as written; here it needs
		// --yes (exit 2 naming --yes), and runs with it.
		needsYes bool
	}{
		{cmd: "key create --name local --scopes read,write,delete --visibility personal,work,shared", want: "pgm-"},
		{cmd: "key create local2 --scopes read"},
		{cmd: "key list", want: "local2"},
		{cmd: "stats"},
		{cmd: "audit", want: "key.create"},
		{cmd: "model list", want: "deterministic-v1"},
		{cmd: "embeddings migrate --target-dimensions 1024 --dry-run", want: "would switch"},
		{cmd: "embeddings migrate --target-dimensions 1024 --yes", want: "EMBEDDING_DIMENSIONS=1024"},
		{cmd: "reembed --all", want: "queued 2 entities"},
		{cmd: "reembed --all --type document", want: "queued 1 entities"},
		{cmd: "reembed --all --model 1", want: "(32 dimensions)"},
		{cmd: "reextract --all"},
		{cmd: "reextract --type document --no-edges-only"},
		{cmd: "reextract --all --clean-edges", needsYes: true},
		{cmd: "reextract --type document --clean-edges", needsYes: true},
		{cmd: "reextract --all --only-failed --limit 10"},
		{cmd: "improve-graph --type document --no-edges-only --provider ollama --model llama3.2"},
		{cmd: "link-neighbors --all"},
		{cmd: "link-neighbors --type document"},
		{cmd: "link-neighbors --id {doc}"},
		{cmd: "link-neighbors --id {doc} --dry-run"},
		{cmd: "link-neighbors --all --dry-run"},
		{cmd: "link-neighbors --all --min-similarity 0.75 --max-neighbors 5"},
		{cmd: "link-neighbors --all --limit 500"},
		{cmd: "prune-edges --below 0.5 --dry-run"},
		{cmd: "prune-edges --below 0.5", needsYes: true},
		{cmd: "validate-edges --dry-run --limit 200"},
		{cmd: "validate-edges --limit 200", needsYes: true},
		{cmd: `sql "SELECT id, type, extraction_status FROM entities LIMIT 5"`, want: "document"},
		{cmd: `sql --json "SELECT COUNT(*) FROM edges WHERE source = 'llm-extraction'"`},
		{cmd: "sql", stdin: "SELECT type\nFROM entities\nORDER BY type;\n", want: "memory"},
		{cmd: `sql "  SELECT id, {length}(content) AS chars, created_at  FROM entities  WHERE type = 'document'    AND extraction_status = 'completed'    AND NOT EXISTS (      SELECT 1 FROM edges WHERE source_id = id AND source = 'llm-extraction'    )  ORDER BY chars DESC  LIMIT 20"`},
		{cmd: `sql "SELECT extraction_status, COUNT(*) FROM entities GROUP BY 1"`},
		{cmd: "--json memory groom --all-clients --older-than 7d --mode promote --yes"},
		{cmd: "memory groom --client-id local --dry-run"},
		{cmd: "memory groom-durable --dry-run --older-than 30d"},
		{cmd: "memory groom-durable --mode mark --yes --older-than 30d"},
		{cmd: "memory apply-durable-grooming --dry-run"},
		{cmd: "memory apply-durable-grooming --yes"},
	}
	for _, ex := range examples {
		args := shellWords(t, strings.NewReplacer("{doc}", doc.ID.String(), "{length}", lengthFn).Replace(ex.cmd))
		if ex.needsYes {
			if out, errs, code := admin(t, vars, ex.stdin, args...); code != apierror.ExitUsage || !strings.Contains(errs, "--yes") {
				t.Errorf("pgm-admin %s without --yes: exit %d\n%s%s", ex.cmd, code, out, errs)
			}
			args = append(args, "--yes")
		}
		out, errs, code := admin(t, vars, ex.stdin, args...)
		if code != 0 {
			t.Errorf("pgm-admin %s: exit %d\n%s%s", ex.cmd, code, out, errs)
			continue
		}
		if !strings.Contains(out, ex.want) {
			t.Errorf("pgm-admin %s: output lacks %q:\n%s", ex.cmd, ex.want, out)
		}
		if strings.HasPrefix(ex.cmd, "--json") && !json.Valid([]byte(out)) {
			t.Errorf("pgm-admin %s: not JSON: %s", ex.cmd, out)
		}
	}
}

// TestKeyCreateName: the name is the argument or --name, not both.
func TestKeyCreateName(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"POSTGRAM_DATA_DIR": t.TempDir(), "LOG_LEVEL": "error"}
	mustAdmin(t, vars, "", "migrate")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"key", "create"}, "needs a name"},
		{[]string{"key", "create", "a", "--name", "b"}, "given twice"},
		{[]string{"key", "create", "a", "b"}, "accepts at most 1 arg"},
		{[]string{"key", "create", "a", "--visibility", "shared", "--visibilities", "work"}, "same flag"},
	} {
		if _, errs, code := admin(t, vars, "", c.args...); code != apierror.ExitUsage || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, %s", c.args, code, errs)
		}
	}
	mustAdmin(t, vars, "", "key", "create", "same", "--name", "same", "--visibility", "personal,work")
	if out := mustAdmin(t, vars, "", "key", "list", "--json"); !strings.Contains(out, `"allowed_visibilities":["personal","work"]`) {
		t.Fatalf("--visibility not applied: %s", out)
	}
}

// shellWords splits a command line as a POSIX shell would for the
// examples: words separated by spaces, double-quoted strings kept whole.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %s", s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}
