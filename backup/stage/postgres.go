package stage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/postgram-go/postgram/storage/postgres"
)

// Postgres is the schema a PostgreSQL DSN's search_path selects (its
// current_schema) as a restore target. The staging store is a new schema
// of the same database; the switch renames both schemas in one
// transaction (and moves the vector extension along when it lives in the
// target schema, as with the default "public"). Servers should be
// restarted after a restore (their prepared statements name the old
// tables).
type Postgres struct {
	URL string
	// Now names the staging and old schemas. Default time.Now.
	Now func() time.Time
}

func (t Postgres) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Describe implements Target.
func (t Postgres) Describe() string {
	if u, err := url.Parse(t.URL); err == nil && u.Scheme != "" {
		if sp := u.Query().Get("search_path"); sp != "" {
			return "schema " + strings.Split(sp, ",")[0] + " of " + u.Redacted()
		}
		return u.Redacted()
	}
	return "the PostgreSQL database"
}

// schemas returns the target schema and the schema holding the vector
// extension ("" when it is not installed).
func (t Postgres) schemas(ctx context.Context, conn *pgx.Conn) (target, ext string, err error) {
	var cur *string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&cur); err != nil {
		return "", "", err
	}
	if cur == nil {
		return "", "", errors.New("the search_path names no existing schema: create it (pgm-admin migrate) first")
	}
	err = conn.QueryRow(ctx, `SELECT coalesce((SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname = 'vector'), '')`).Scan(&ext)
	return *cur, ext, err
}

// Counts implements Target.
func (t Postgres) Counts(ctx context.Context) (map[string]int64, error) {
	st, err := postgres.Open(ctx, postgres.Config{URL: t.URL, MaxConns: 2})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	c, err := st.BackupRowCounts(ctx)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table: not migrated, so empty
		return map[string]int64{}, nil
	}
	return c, err
}

// Stage implements Target: a new schema next to the target's.
func (t Postgres) Stage(ctx context.Context) (Staging, error) {
	conn, err := pgx.Connect(ctx, t.URL)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	target, ext, err := t.schemas(ctx, conn)
	if err != nil {
		return nil, err
	}
	suffix := "_restore_" + t.now().UTC().Format("20060102_150405")
	name := target
	if len(name)+len(suffix) > 63 {
		name = name[:63-len(suffix)]
	}
	name += suffix
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create schema %s: %w", name, err)
	}
	s := &pgStaging{t: t, target: target, ext: ext, name: name}
	u, err := url.Parse(t.URL)
	if err != nil || u.Scheme == "" {
		s.Discard(ctx)
		return nil, errors.New("a restore into PostgreSQL needs DATABASE_URL in URL form (postgres://...)")
	}
	q := u.Query()
	path := name
	if ext != "" {
		path += "," + ext
	}
	q.Set("search_path", path)
	u.RawQuery = q.Encode()
	st, err := postgres.Open(ctx, postgres.Config{URL: u.String()})
	if err != nil {
		s.Discard(ctx)
		return nil, err
	}
	s.st = st
	if err := st.Migrate(ctx); err != nil {
		s.Discard(ctx)
		return nil, err
	}
	return s, nil
}

type pgStaging struct {
	t           Postgres
	target, ext string
	name        string
	st          *postgres.Store
}

func (s *pgStaging) Store() Store     { return s.st }
func (s *pgStaging) Describe() string { return "schema " + s.name }

// Switch implements Staging: in one transaction the target schema becomes
// <target>_pre_restore_<time>, the staging schema the target, and the
// vector extension, when it lived in the target schema, moves into the
// new one.
func (s *pgStaging) Switch(ctx context.Context) (string, error) {
	s.st.Close()
	s.st = nil
	conn, err := pgx.Connect(ctx, s.t.URL)
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	suffix := "_pre_restore_" + s.t.now().UTC().Format("20060102_150405")
	old := s.target
	if len(old)+len(suffix) > 63 {
		old = old[:63-len(suffix)]
	}
	old += suffix
	id := func(n string) string { return pgx.Identifier{n}.Sanitize() }
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "ALTER SCHEMA "+id(s.target)+" RENAME TO "+id(old)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "ALTER SCHEMA "+id(s.name)+" RENAME TO "+id(s.target)); err != nil {
			return err
		}
		if s.ext == s.target {
			if _, err := tx.Exec(ctx, "ALTER EXTENSION vector SET SCHEMA "+id(s.target)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return "schema " + old, nil
}

// Discard implements Staging.
func (s *pgStaging) Discard(ctx context.Context) error {
	if s.st != nil {
		s.st.Close()
		s.st = nil
	}
	conn, err := pgx.Connect(ctx, s.t.URL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s.name}.Sanitize()+" CASCADE")
	return err
}
