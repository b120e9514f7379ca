package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/cmd/internal/config"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/transport/apierror"
)

// TestModelCommands switches the embedded store's model as an operator
// would after the server refused to start with a new EMBEDDING_MODEL.
func TestModelCommands(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"POSTGRAM_DATA_DIR": t.TempDir(), "LOG_LEVEL": "error",
		"EMBEDDING_PROVIDER": "deterministic", "EMBEDDING_DIMENSIONS": "32"}
	mustAdmin(t, vars, "", "migrate")
	ctx := context.Background()
	c, st := serverClient(t, vars, nil)
	if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "a note to re-embed"}); err != nil {
		t.Fatal(err)
	}
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()

	out := mustAdmin(t, vars, "", "model", "list")
	if !strings.Contains(out, "deterministic-v1") || !strings.Contains(out, "32") || !strings.Contains(out, "yes") {
		t.Fatalf("model list:\n%s", out)
	}
	// The server's refusal names the command; the command needs --yes.
	vars16 := map[string]string{}
	for k, v := range vars {
		vars16[k] = v
	}
	vars16["EMBEDDING_DIMENSIONS"] = "16"
	env16, _ := config.Parse(func(k string) string { return vars16[k] })
	st, _ = env16.OpenStore(ctx, slog.New(slog.DiscardHandler))
	emb16, _ := env16.Embedder()
	if _, err := postgram.New(ctx, env16.ClientConfig(st, emb16, nil)); err == nil || !strings.Contains(err.Error(), "pgm-admin embeddings migrate --provider test --model deterministic-v1 --dimensions 16 --yes") {
		t.Fatalf("mismatch error: %v", err)
	}
	st.Close()
	args := []string{"embeddings", "migrate", "--provider", "test", "--model", "deterministic-v1", "--dimensions", "16"}
	if _, errs, code := admin(t, vars, "", args...); code != apierror.ExitUsage || !strings.Contains(errs, "--yes") {
		t.Fatalf("migrate without --yes: %d %s", code, errs)
	}
	if out := mustAdmin(t, vars, "", append(args, "--dry-run")...); !strings.Contains(out, "would switch") {
		t.Fatalf("dry run:\n%s", out)
	}
	out = mustAdmin(t, vars, "", append(args, "--yes")...)
	if !strings.Contains(out, "1 entities queued") || !strings.Contains(out, "EMBEDDING_DIMENSIONS=16") {
		t.Fatalf("migrate:\n%s", out)
	}
	st, _ = env16.OpenStore(ctx, slog.New(slog.DiscardHandler))
	c16, err := postgram.New(ctx, env16.ClientConfig(st, emb16, nil))
	if err != nil {
		t.Fatalf("the new model after migrate: %v", err)
	}
	if x, err := postgramtest.Admin(t, c16).EnrichPending(ctx); err != nil || x.Entities != 1 {
		t.Fatalf("re-embedding: %v %+v", err, x)
	}
	st.Close()
	// Back to the first model by id; reembed needs a scope.
	if out := mustAdmin(t, vars, "", "model", "set-active", "1", "--yes"); !strings.Contains(out, "(32 dimensions)") {
		t.Fatalf("set-active:\n%s", out)
	}
	if _, errs, code := admin(t, vars, "", "model", "set-active", "9", "--yes"); code != apierror.ExitUsage || !strings.Contains(errs, "no embedding model 9") {
		t.Fatalf("set-active unknown: %d %s", code, errs)
	}
	if _, errs, code := admin(t, vars, "", "reembed"); code != apierror.ExitUsage || !strings.Contains(errs, "--all") {
		t.Fatalf("reembed without scope: %d %s", code, errs)
	}
	if out := mustAdmin(t, vars, "", "reembed", "--type", "memory"); !strings.Contains(out, "queued 1 entities") {
		t.Fatalf("reembed:\n%s", out)
	}
}
