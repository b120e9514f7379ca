package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/storage/postgres"
)

// referenceTables are the store-wide tables: small, shared by every
// workspace, replicated to every node as Citus reference tables (or kept
// on the coordinator). Every other table is distributed by workspace_id.
var referenceTables = []string{"embedding_models", "oauth_records", "postgram_schema_version", "web_sessions", "web_users"}

// distributedTriggers are the triggers on distributed tables. Citus runs
// them on the shards only with citus.enable_unsafe_triggers, and a trigger
// must then touch only its own shard's co-located rows: the chunk
// statistics triggers write lexeme_stats_delta rows of the chunk's own
// workspace (co-located with chunks), the audit trigger refuses changes,
// the key trigger only notifies, the search-change triggers write
// search_changes rows of the changed row's own workspace. A new trigger
// must be checked against that rule and listed here.
var distributedTriggers = []string{
	"api_keys.postgram_api_keys_notify",
	"audit_log.postgram_audit_log_append_only",
	"chunks.postgram_chunks_search_change",
	"chunks.postgram_chunks_stats_delete",
	"chunks.postgram_chunks_stats_insert",
	"chunks.postgram_chunks_stats_truncate",
	"chunks.postgram_chunks_stats_update",
	"edges.postgram_edges_search_change",
	"entities.postgram_entities_search_change",
}

// TestCitusCompatibleSchema checks the migrated schema against the rules
// Citus sets for distributing tables by a column (here workspace_id), so
// that a deployment can spread workspaces over nodes
// (create_distributed_table(t, 'workspace_id') for every workspace table,
// create_reference_table for the store-wide ones; README, "Beyond one
// database"). Citus cannot be installed here, so the rules are checked in
// the catalog:
//
//   - every table but the store-wide ones has a NOT NULL workspace_id;
//   - every primary key, unique constraint and unique index of a
//     distributed table includes workspace_id;
//   - every foreign key between distributed tables includes workspace_id
//     on both sides, at the same position (co-located: the referencing
//     row's workspace is the referenced row's);
//   - no foreign key from a reference table to a distributed one;
//   - no exclusion constraint without workspace_id;
//   - the triggers on distributed tables are the known, shard-local ones.
func TestCitusCompatibleSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	st, err := postgres.Open(ctx, postgres.Config{URL: dsn, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}

	// The tables and whether each has a NOT NULL workspace_id.
	distributed := map[string]bool{}
	var reference []string
	rows, _ := conn.Query(ctx, `SELECT c.relname, coalesce(a.attnotnull, false)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'workspace_id' AND NOT a.attisdropped
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY 1`, schema)
	var name string
	var hasWS bool
	if _, err := pgx.ForEachRow(rows, []any{&name, &hasWS}, func() error {
		if hasWS {
			distributed[name] = true
		} else {
			reference = append(reference, name)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(referenceTables, reference); d != "" {
		t.Errorf("tables without a NOT NULL workspace_id (-want +got): a workspace table must carry it, a store-wide one be listed:\n%s", d)
	}
	if len(distributed) < 10 {
		t.Fatalf("only %d workspace tables found", len(distributed))
	}

	var problems []string
	// Unique indexes (primary keys and unique constraints have one).
	rows, _ = conn.Query(ctx, `SELECT t.relname, i.relname,
			EXISTS (SELECT 1 FROM unnest(x.indkey) k JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k
				WHERE a.attname = 'workspace_id')
		FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
		JOIN pg_namespace n ON n.oid = t.relnamespace
		WHERE n.nspname = $1 AND x.indisunique`, schema)
	var table, index string
	var includes bool
	if _, err := pgx.ForEachRow(rows, []any{&table, &index, &includes}, func() error {
		if distributed[table] && !includes {
			problems = append(problems, fmt.Sprintf("unique index %s on %s lacks workspace_id", index, table))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Foreign keys and exclusion constraints.
	rows, _ = conn.Query(ctx, `SELECT c.conname, c.contype::text, t.relname, coalesce(r.relname, ''),
			array(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, o)
				JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o),
			array(SELECT a.attname::text FROM unnest(coalesce(c.confkey, '{}')) WITH ORDINALITY k(n, o)
				JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.o)
		FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
		LEFT JOIN pg_class r ON r.oid = c.confrelid
		WHERE n.nspname = $1 AND c.contype IN ('f', 'x')`, schema)
	var con, typ, ref string
	var cols, refCols []string
	fks := 0
	if _, err := pgx.ForEachRow(rows, []any{&con, &typ, &table, &ref, &cols, &refCols}, func() error {
		switch {
		case typ == "x" && distributed[table] && !slices.Contains(cols, "workspace_id"):
			problems = append(problems, fmt.Sprintf("exclusion constraint %s on %s lacks workspace_id", con, table))
		case typ == "f" && !distributed[table] && distributed[ref]:
			problems = append(problems, fmt.Sprintf("foreign key %s from the reference table %s to the distributed %s", con, table, ref))
		case typ == "f" && distributed[table] && distributed[ref]:
			fks++
			i := slices.Index(cols, "workspace_id")
			if i < 0 || i >= len(refCols) || refCols[i] != "workspace_id" {
				problems = append(problems, fmt.Sprintf("foreign key %s %s%v -> %s%v is not co-located by workspace_id", con, table, cols, ref, refCols))
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fks == 0 {
		t.Fatal("no foreign key between workspace tables was checked")
	}
	// Triggers on distributed tables.
	rows, _ = conn.Query(ctx, `SELECT c.relname || '.' || p.proname
		FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_proc p ON p.oid = g.tgfoid
		WHERE n.nspname = $1 AND NOT g.tgisinternal ORDER BY 1`, schema)
	var trig string
	var triggers []string
	if _, err := pgx.ForEachRow(rows, []any{&trig}, func() error {
		if distributed[strings.SplitN(trig, ".", 2)[0]] {
			triggers = append(triggers, trig)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	triggers = slices.Compact(triggers)
	if d := cmp.Diff(distributedTriggers, triggers); d != "" {
		t.Errorf("triggers on distributed tables (-known +found): check a new one against Citus's rules and list it:\n%s", d)
	}
	if len(problems) > 0 {
		t.Errorf("the schema cannot be distributed by workspace_id:\n  %s", strings.Join(problems, "\n  "))
	}
	t.Logf("%d distributed tables, %d reference tables, %d co-located foreign keys, %d shard-local triggers",
		len(distributed), len(reference), fks, len(triggers))
}
