package e2e

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/postgram-go/postgram/internal/pgtest"
)

// TestServerAsAppRole: the production setup of row-level security.
// postgram-server connects (DATABASE_URL) as a login role that is only a
// member of postgram_app, with DATABASE_MIGRATION_URL as the schema's
// owner: it migrates, creates its vector index, writes, searches and keeps
// workspaces apart, and the role itself cannot read a row without the
// workspace setting.
func TestServerAsAppRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner := freshDSN(t)
	app := pgtest.AppLogin(t, owner, "postgram_e2e_srv")

	s := startServer(t, app, "DATABASE_MIGRATION_URL="+owner)
	key, err := os.ReadFile(s.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(string(key))
	code, body := api(t, "POST", s.URL+"/api/entities", admin, map[string]any{"type": "memory",
		"content": "Row-level security keeps tenants apart", "tags": []string{"rls"}})
	if code != 201 {
		t.Fatalf("store as the app role: %d %v\n%s", code, body, s.stderr.String())
	}
	code, body = api(t, "POST", s.URL+"/api/search", admin, map[string]any{"query": "tenants apart"})
	if res, _ := body["results"].([]any); code != 200 || len(res) != 1 {
		t.Fatalf("search as the app role: %d %v", code, body)
	}
	// The login itself sees nothing without the setting, and only its
	// workspace with it.
	lc, err := pgx.Connect(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close(ctx)
	var n int
	if err := lc.QueryRow(ctx, "SELECT count(*) FROM entities").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the app login without a workspace sees %d entities (%v)", n, err)
	}
	if err := lc.QueryRow(ctx, "SELECT set_config('postgram.workspace', 'other', false)").Scan(new(string)); err != nil {
		t.Fatal(err)
	}
	if err := lc.QueryRow(ctx, "SELECT count(*) FROM entities").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the app login in another workspace sees %d entities (%v)", n, err)
	}
	if err := lc.QueryRow(ctx, "SELECT set_config('postgram.workspace', 'default', false)").Scan(new(string)); err != nil {
		t.Fatal(err)
	}
	if err := lc.QueryRow(ctx, "SELECT count(*) FROM entities").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the app login in its workspace sees %d entities (%v)", n, err)
	}
	if _, err := lc.Exec(ctx, "CREATE TABLE stolen (x int)"); err == nil {
		t.Fatal("the app login may create tables in the schema")
	}
	// The server warned about the cluster's slow settings, with the fix.
	var rpc float64
	if err := lc.QueryRow(ctx, "SELECT current_setting('random_page_cost')::float8").Scan(&rpc); err != nil {
		t.Fatal(err)
	}
	if rpc >= 4 && !strings.Contains(s.stderr.String(), "slow database settings: PostgreSQL random_page_cost is 4") {
		t.Errorf("no warning about random_page_cost %g:\n%s", rpc, s.stderr.String())
	}
}
