package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/storage/postgres"
)

// loopbackDSN is the throwaway test cluster started by scripts/pgtest.sh.
const loopbackDSN = "postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable"

// defaultDatabaseURL returns DATABASE_URL, else the loopback test cluster.
func defaultDatabaseURL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return loopbackDSN
}

var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// checkSchemaName accepts lower-case unquoted identifiers only, so the name
// can be spliced into SQL and a search_path safely.
func checkSchemaName(s string) error {
	if !schemaRE.MatchString(s) {
		return fmt.Errorf("schema %q must be a lower-case identifier: letters, digits and '_', at most 63, not starting with a digit", s)
	}
	return nil
}

// dsnWithSearchPath returns dsn with search_path=<schema>,public, as a URL
// query parameter (postgres:// URLs) or a keyword (key=value strings); pgx
// sends it as a run-time parameter on every connection.
func dsnWithSearchPath(dsn, schema string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("database URL is not a valid URL")
		}
		q := u.Query()
		q.Set("search_path", schema+",public")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	if strings.Contains(dsn, "search_path") {
		return "", fmt.Errorf("the keyword/value database URL already sets search_path; remove it")
	}
	return dsn + " search_path=" + schema + ",public", nil
}

// redact hides the password of a URL DSN for printing.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return "(keyword/value DSN)"
	}
	return u.Redacted()
}

// openStore connects to dsn (already carrying the search_path).
func openStore(ctx context.Context, dsn string, maxConns int) (*postgres.Store, error) {
	return openStoreWith(ctx, postgres.Config{URL: dsn, MaxConns: int32(maxConns)})
}

// openStoreWith opens a store configured by cfg (its URL carrying the
// search_path).
func openStoreWith(ctx context.Context, cfg postgres.Config) (*postgres.Store, error) {
	st, err := postgres.Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL (is it running? scripts/pgtest.sh start): %w", err)
	}
	return st, nil
}

// exec runs one statement on the store's pool.
func exec(ctx context.Context, st *postgres.Store, sql string, args ...any) error {
	_, err := st.Pool().Exec(ctx, sql, args...)
	return err
}

// prepareSchema makes sure pgvector exists (in public, so every bench
// schema shares it) and, with reset, drops the schema; then creates it if
// missing.
func prepareSchema(ctx context.Context, st *postgres.Store, schema string, reset bool) error {
	var have bool
	if err := st.Pool().QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')").Scan(&have); err != nil {
		return fmt.Errorf("check the vector extension: %w", err)
	}
	if !have {
		if err := exec(ctx, st, "CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public"); err != nil {
			return fmt.Errorf("create extension vector: %w", err)
		}
	}
	if reset {
		if err := dropSchema(ctx, st, schema); err != nil {
			return err
		}
	}
	if err := exec(ctx, st, `CREATE SCHEMA IF NOT EXISTS "`+schema+`"`); err != nil {
		return fmt.Errorf("create schema %s: %w", schema, err)
	}
	return nil
}

// dropSchema drops the schema and everything in it.
func dropSchema(ctx context.Context, st *postgres.Store, schema string) error {
	if err := exec(ctx, st, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	return nil
}

// schemaTables counts the tables in schema.
func schemaTables(ctx context.Context, st *postgres.Store, schema string) (int, error) {
	var n int
	err := st.Pool().QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1", schema).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("list tables of %s: %w", schema, err)
	}
	return n, nil
}

// benchMeta describes the fixture a bench schema holds (table bench_meta,
// one row, written only once the fixture is complete).
type benchMeta struct {
	Version      int       `json:"fixture_version"`
	Entities     int       `json:"entities"`
	Chunks       int       `json:"chunks"`
	Dims         int       `json:"dims"`
	Seed         int64     `json:"seed"`
	Migration    int32     `json:"schema_version"` // the store's migration version when built
	BuiltAt      time.Time `json:"built_at"`
	BuildSeconds float64   `json:"build_seconds"`
}

// matches reports whether m describes the fixture the flags ask for, built
// under the same migrations (a migration may change how rows are stored,
// which only rows written after it reflect).
func (m *benchMeta) matches(o benchMeta) bool {
	return m.Version == o.Version && m.Entities == o.Entities && m.Chunks == o.Chunks && m.Dims == o.Dims &&
		m.Seed == o.Seed && m.Migration == o.Migration
}

// readMeta returns the schema's fixture description, or nil when the schema
// has none (no bench_meta table, or no row). The row is read as JSON so
// that rows written by older versions of this command still decode.
func readMeta(ctx context.Context, st *postgres.Store, schema string) (*benchMeta, error) {
	var exists bool
	if err := st.Pool().QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", `"`+schema+`".bench_meta`).Scan(&exists); err != nil {
		return nil, fmt.Errorf("look for bench_meta: %w", err)
	}
	if !exists {
		return nil, nil
	}
	rows, err := st.Pool().Query(ctx, `SELECT row_to_json(m)::text FROM "`+schema+`".bench_meta m`)
	if err != nil {
		return nil, fmt.Errorf("read bench_meta: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	var js string
	if err := rows.Scan(&js); err != nil {
		return nil, fmt.Errorf("read bench_meta: %w", err)
	}
	var m benchMeta
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		return nil, fmt.Errorf("decode bench_meta: %w", err)
	}
	return &m, nil
}

// writeMeta records a completed fixture, replacing any older bench_meta.
func writeMeta(ctx context.Context, st *postgres.Store, schema string, m benchMeta) error {
	t := `"` + schema + `".bench_meta`
	err := exec(ctx, st, `DROP TABLE IF EXISTS `+t)
	if err == nil {
		err = exec(ctx, st, `CREATE TABLE `+t+` (
		fixture_version int NOT NULL, entities int NOT NULL, chunks int NOT NULL, dims int NOT NULL,
		seed bigint NOT NULL, schema_version int NOT NULL, built_at timestamptz NOT NULL, build_seconds float8 NOT NULL)`)
	}
	if err == nil {
		err = exec(ctx, st, `INSERT INTO `+t+` VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			m.Version, m.Entities, m.Chunks, m.Dims, m.Seed, m.Migration, m.BuiltAt, m.BuildSeconds)
	}
	if err != nil {
		return fmt.Errorf("write bench_meta: %w", err)
	}
	return nil
}

// analyze vacuums the schema's tables and refreshes their planner statistics.
func analyze(ctx context.Context, st *postgres.Store, schema string) error {
	// VACUUM as well: a fixture written in bulk has no visibility map yet
	// (every index scan then visits the heap), which autovacuum would set
	// within minutes on a real server.
	for _, t := range []string{"entities", "chunks", "edges", "query_embeddings"} {
		if err := exec(ctx, st, `VACUUM ANALYZE "`+schema+`".`+t); err != nil {
			return fmt.Errorf("vacuum analyze %s: %w", t, err)
		}
	}
	return nil
}

// dropVectorIndexes drops the chunk table's HNSW indexes (in the current
// schema) and returns their definitions for createIndexes.
func dropVectorIndexes(ctx context.Context, st *postgres.Store) ([]string, error) {
	rows, err := st.Pool().Query(ctx, `SELECT indexname, indexdef FROM pg_indexes
		WHERE schemaname = current_schema() AND tablename = 'chunks' AND indexdef LIKE '% USING hnsw %'`)
	if err != nil {
		return nil, fmt.Errorf("list HNSW indexes: %w", err)
	}
	type index struct{ name, def string }
	idx, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (index, error) {
		var x index
		err := r.Scan(&x.name, &x.def)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("list HNSW indexes: %w", err)
	}
	defs := make([]string, len(idx))
	for i, x := range idx {
		if err := exec(ctx, st, "DROP INDEX "+pgx.Identifier{x.name}.Sanitize()); err != nil {
			return nil, fmt.Errorf("drop index %s: %w", x.name, err)
		}
		defs[i] = x.def
	}
	return defs, nil
}

// createIndexes runs index definitions with memMiB of maintenance_work_mem,
// enough to build an HNSW graph in one pass when it fits.
func createIndexes(ctx context.Context, st *postgres.Store, defs []string, memMiB int) error {
	for _, def := range defs {
		err := pgx.BeginFunc(ctx, st.Pool(), func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL maintenance_work_mem = '%dMB'", memMiB)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, def)
			return err
		})
		if err != nil {
			return fmt.Errorf("create index: %w", err)
		}
	}
	return nil
}

// fixtureCounts is what the schema actually holds for a workspace.
type fixtureCounts struct {
	Entities, Chunks, Embedded int
	NarrowEntities             int
	NarrowChunks               int
}

func countFixture(ctx context.Context, st *postgres.Store, ws string) (fixtureCounts, error) {
	var c fixtureCounts
	err := st.Pool().QueryRow(ctx, `SELECT
			(SELECT count(*) FROM entities WHERE workspace_id = $1),
			(SELECT count(*) FROM chunks WHERE workspace_id = $1),
			(SELECT count(*) FROM chunks WHERE workspace_id = $1 AND embedding IS NOT NULL),
			(SELECT count(*) FROM entities WHERE workspace_id = $1 AND tags @> ARRAY[$2]::text[]),
			(SELECT count(*) FROM chunks c JOIN entities e ON e.workspace_id = c.workspace_id AND e.id = c.entity_id
				WHERE c.workspace_id = $1 AND e.tags @> ARRAY[$2]::text[])`, ws, narrowTag).
		Scan(&c.Entities, &c.Chunks, &c.Embedded, &c.NarrowEntities, &c.NarrowChunks)
	if err != nil {
		return c, fmt.Errorf("count fixture: %w", err)
	}
	return c, nil
}

// serverInfo returns the PostgreSQL and pgvector versions and a few
// settings that matter for the numbers.
func serverInfo(ctx context.Context, st *postgres.Store) string {
	var ver, vec, sb, wm string
	err := st.Pool().QueryRow(ctx, `SELECT current_setting('server_version'),
		coalesce((SELECT extversion FROM pg_extension WHERE extname = 'vector'), '?'),
		current_setting('shared_buffers'), current_setting('work_mem')`).Scan(&ver, &vec, &sb, &wm)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return fmt.Sprintf("PostgreSQL %s, pgvector %s, shared_buffers=%s, work_mem=%s", ver, vec, sb, wm)
}

// relationSizes returns the on-disk size of the schema's main relations.
func relationSizes(ctx context.Context, st *postgres.Store, schema string) (string, error) {
	rows, err := st.Pool().Query(ctx, `SELECT c.relname, pg_total_relation_size(c.oid)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'i') AND (c.relname IN ('entities', 'chunks') OR c.relname LIKE 'chunks_%')
		ORDER BY c.relkind DESC, c.relname`, schema)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var name string
		var size int64
		if err := rows.Scan(&name, &size); err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s=%s", name, mib(uint64(size))))
	}
	return strings.Join(parts, ", "), rows.Err()
}
