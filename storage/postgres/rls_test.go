package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/storage/postgres"
)

// TestRowLevelSecurityAppRole connects with raw SQL as the postgram_app role
// (migration 013) and tries to cross workspaces: without the
// postgram.workspace setting it sees no rows and writes none; with it, it
// sees and writes only its own workspace's rows.
func TestRowLevelSecurityAppRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	st, err := postgres.Open(ctx, postgres.Config{URL: dsn, MaxConns: 2})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}

	owner, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { owner.Close(ctx) })
	if _, err := owner.Exec(ctx, `INSERT INTO lexeme_stats_delta (workspace_id, sign, positions, tsv)
		VALUES ('alpha', 1, 1, 'a'::tsvector), ('beta', 1, 1, 'b'::tsvector)`); err != nil {
		t.Fatalf("seed: %v", err)
	}

	app, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { app.Close(ctx) })
	if _, err := app.Exec(ctx, "SET ROLE postgram_app"); err != nil {
		t.Fatalf("set role: %v", err)
	}
	var bypass bool
	if err := app.QueryRow(ctx, `SELECT rolbypassrls OR rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&bypass); err != nil {
		t.Fatalf("role attributes: %v", err)
	}
	if bypass {
		t.Fatal("postgram_app can bypass row-level security")
	}

	count := func(tx pgx.Tx, table string) int {
		t.Helper()
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		return n
	}

	// No setting: nothing visible, nothing writable.
	tx, err := app.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"lexeme_stats_delta", "entities", "chunks", "edges", "api_keys", "audit_log", "sync_files", "lexeme_stats", "query_embeddings"} {
		if n := count(tx, table); n != 0 {
			t.Errorf("without postgram.workspace, %s shows %d rows", table, n)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO lexeme_stats_delta (workspace_id, sign, positions, tsv)
		VALUES ('alpha', 1, 1, 'x'::tsvector)`); err == nil {
		t.Error("insert without postgram.workspace succeeded")
	}
	_ = tx.Rollback(ctx)

	// Workspace alpha: its own row only; beta's rows are out of reach.
	tx, err = app.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT set_config('postgram.workspace', $1, true)", "alpha"); err != nil {
		t.Fatalf("set workspace: %v", err)
	}
	if n := count(tx, "lexeme_stats_delta"); n != 1 {
		t.Errorf("alpha sees %d rows, want 1", n)
	}
	if n := count(tx, "lexeme_stats_delta WHERE workspace_id = 'beta'"); n != 0 {
		t.Errorf("alpha sees %d rows of beta", n)
	}
	tag, err := tx.Exec(ctx, "DELETE FROM lexeme_stats_delta WHERE workspace_id = 'beta'")
	if err != nil || tag.RowsAffected() != 0 {
		t.Errorf("alpha deleting beta's rows: %d rows, err %v", tag.RowsAffected(), err)
	}
	if _, err := tx.Exec(ctx, "UPDATE lexeme_stats_delta SET workspace_id = 'beta'"); err == nil {
		t.Error("alpha moved its row into beta")
	}
	_ = tx.Rollback(ctx)

	tx, err = app.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT set_config('postgram.workspace', $1, true)", "alpha"); err != nil {
		t.Fatalf("set workspace: %v", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO lexeme_stats_delta (workspace_id, sign, positions, tsv)
		VALUES ('beta', 1, 1, 'x'::tsvector)`); err == nil {
		t.Error("alpha inserted a row into beta")
	}
	_ = tx.Rollback(ctx)

	// The workspace directory (migration 017): every name is readable, but
	// a connection adds or removes only its own workspace's entry; a key's
	// workspace is found by digest alone, with nothing else revealed.
	if _, err := owner.Exec(ctx, `INSERT INTO workspaces VALUES ('beta', now()) ON CONFLICT DO NOTHING`); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, `INSERT INTO api_keys (workspace_id, id, name, prefix, key_hash, scopes, client_id, created_at)
		VALUES ('beta', gen_random_uuid(), 'k', 'pgm_x', '\xbeef', '{read}', 'k', now())`); err != nil {
		t.Fatal(err)
	}
	tx, err = app.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(tx, "workspaces WHERE workspace_id = 'beta'"); n != 1 {
		t.Errorf("the app role sees %d directory entries of beta, want 1", n)
	}
	var found *string
	if err := tx.QueryRow(ctx, `SELECT postgram_key_workspace('\xbeef')`).Scan(&found); err != nil || found == nil || *found != "beta" {
		t.Errorf("postgram_key_workspace without a setting: %v %v", found, err)
	}
	if n := count(tx, "api_keys"); n != 0 {
		t.Errorf("after the key lookup the app role sees %d keys", n)
	}
	if _, err := tx.Exec(ctx, "SELECT set_config('postgram.workspace', $1, true)", "alpha"); err != nil {
		t.Fatal(err)
	}
	if tag, err := tx.Exec(ctx, "DELETE FROM workspaces WHERE workspace_id = 'beta'"); err != nil || tag.RowsAffected() != 0 {
		t.Errorf("alpha removed beta's directory entry: %d rows, err %v", tag.RowsAffected(), err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO workspaces VALUES ('gamma', now())"); err == nil {
		t.Error("alpha entered another workspace in the directory")
	}
	_ = tx.Rollback(ctx)

	// The setting is per transaction: gone after commit.
	tx, err = app.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(tx, "lexeme_stats_delta"); n != 0 {
		t.Errorf("after the workspace's transaction, a new one sees %d rows", n)
	}
	_ = tx.Rollback(ctx)

	// The app role owns nothing and has no DDL: it cannot turn the policy off.
	if _, err := app.Exec(ctx, "ALTER TABLE lexeme_stats_delta DISABLE ROW LEVEL SECURITY"); err == nil {
		t.Error("postgram_app disabled row-level security")
	}
	// PUBLIC has no privilege on the tables.
	var publicGrants int
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM information_schema.role_table_grants
		WHERE grantee = 'PUBLIC' AND table_schema = current_schema()`).Scan(&publicGrants); err != nil {
		t.Fatal(err)
	}
	if publicGrants != 0 {
		t.Errorf("PUBLIC holds %d table privileges", publicGrants)
	}
	// Every function pins its search_path.
	var unpinned []string
	rows, err := owner.Query(ctx, `SELECT p.proname FROM pg_proc p
		WHERE p.pronamespace = current_schema()::regnamespace
		AND NOT coalesce(p.proconfig::text[] && ARRAY(SELECT c FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%'), false)`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		unpinned = append(unpinned, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(unpinned) != 0 {
		t.Errorf("functions without a pinned search_path: %v", unpinned)
	}
}
