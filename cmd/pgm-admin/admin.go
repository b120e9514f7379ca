package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/cmd/internal/config"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/sqlite"
)

func (a *app) auditCmd() *cobra.Command {
	var f postgram.AuditFilter
	var since, until string
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit log, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if f.Since, err = parseWhen("since", since); err != nil {
				return err
			}
			if f.Until, err = parseWhen("until", until); err != nil {
				return err
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			entries, err := a.admin.Audit(cmd.Context(), f)
			if err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"entries": entries})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AT\tOPERATION\tKEY\tCLIENT\tENTITY\tDETAILS")
			for _, e := range entries {
				d, _ := json.Marshal(e.Details)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.At.Format(time.RFC3339), e.Operation, dash(e.KeyID), dash(e.ClientID), dash(e.EntityID), d)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "only entries at or after this time (RFC 3339) or age (30m, 4h, 7d)")
	cmd.Flags().StringVar(&until, "until", "", "only entries before this time (RFC 3339) or age")
	cmd.Flags().StringVar(&f.KeyID, "key", "", "only entries made with this key id")
	cmd.Flags().StringVar(&f.Operation, "operation", "", "only this operation (entity.store, entity.update, entity.delete, key.create, key.revoke, admin.sql)")
	cmd.Flags().IntVar(&f.Limit, "limit", 100, "at most this many entries (1-10000)")
	cmd.AddCommand(a.auditPruneCmd())
	return cmd
}

// auditPruneCmd is `pgm-admin audit prune`: the audit log's retention, the
// one way to remove entries (the store refuses every other UPDATE and
// DELETE of the log), itself audited.
func (a *app) auditPruneCmd() *cobra.Command {
	var (
		before      string
		dryRun, yes bool
	)
	cmd := &cobra.Command{
		Use:   "prune --before DATE",
		Short: "Delete audit entries older than a date (the log's retention; the prune is itself audited)",
		Long: `prune deletes the workspace's audit entries from before --before and records
the prune (audit.prune, with the cut-off and the number deleted) in the
same transaction. It is the only way to remove entries: the audit table
refuses UPDATE and DELETE otherwise, from pgm-admin sql and psql too.
--dry-run counts the entries; deleting needs --yes.`,
		Example: `  pgm-admin audit prune --before 2025-01-01 --dry-run
  pgm-admin audit prune --before 365d --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(before) == "" {
				return usageError{"--before is required: a date (2025-01-01), an RFC 3339 time or an age (365d)"}
			}
			cut, err := parseWhen("before", before)
			if err != nil {
				return err
			}
			if !dryRun && !yes {
				return usageError{"audit prune deletes audit entries: preview with --dry-run, then run again with --yes"}
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			n, err := a.admin.PruneAudit(cmd.Context(), cut, dryRun)
			if err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"dry_run": dryRun, "before": cut.UTC(), "count": n})
			}
			if dryRun {
				fmt.Fprintf(a.stdout, "would delete %d audit entries from before %s (dry run)\n", n, cut.UTC().Format(time.RFC3339))
			} else {
				fmt.Fprintf(a.stdout, "deleted %d audit entries from before %s (recorded as audit.prune)\n", n, cut.UTC().Format(time.RFC3339))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&before, "before", "", "delete entries older than this date (2025-01-01), RFC 3339 time or age (365d); required")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "count the entries; delete nothing")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm the deletion")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// parseWhen accepts RFC 3339, a date (midnight UTC) or an age such as 30m,
// 4h, 7d.
func parseWhen(field, s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil // midnight UTC
	}
	if strings.HasSuffix(s, "d") {
		var n int
		if _, err := fmt.Sscanf(s, "%dd", &n); err == nil && n >= 0 && fmt.Sprintf("%dd", n) == s {
			return time.Now().Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return time.Now().Add(-d), nil
	}
	return time.Time{}, &postgram.FieldError{Field: field, Message: fmt.Sprintf("%q is neither a date (2025-01-31), an RFC 3339 time nor an age like 30m, 4h or 7d", s)}
}

func (a *app) statsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Entity and chunk counts by type and status, and the database size",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			st, err := a.admin.Stats(cmd.Context())
			if err != nil {
				return err
			}
			q, err := a.client.QueueStatus(cmd.Context(), 0)
			if err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"stats": st, "queue": q})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "workspace\t%s\n", a.client.Workspace())
			fmt.Fprintf(tw, "entities\t%d\n", st.Entities)
			for _, k := range sortedKeys(st.EntitiesByType) {
				fmt.Fprintf(tw, "  type %s\t%d\n", k, st.EntitiesByType[k])
			}
			for _, k := range sortedKeys(st.EntitiesByStatus) {
				fmt.Fprintf(tw, "  status %s\t%d\n", k, st.EntitiesByStatus[k])
			}
			fmt.Fprintf(tw, "chunks\t%d (%d embedded)\n", st.Chunks, st.EmbeddedChunks)
			fmt.Fprintf(tw, "embedding queue\t%d pending, %d failed (%d retry-eligible)\n", q.Embedding.Pending, q.Embedding.Failed, q.Embedding.RetryEligible)
			fmt.Fprintf(tw, "edges\t%d\n", st.Edges)
			fmt.Fprintf(tw, "api keys\t%d\n", st.Keys)
			fmt.Fprintf(tw, "audit entries\t%d\n", st.AuditEntries)
			fmt.Fprintf(tw, "database size\t%s\n", humanBytes(st.DatabaseBytes))
			return tw.Flush()
		},
	}
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func (a *app) sqlCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sql [STATEMENT]",
		Short: "Run one SQL statement (or read it from stdin): SELECT prints TSV (or --json), DML prints affected rows",
		Long: `Run one SQL statement against the database, as its owner. SELECT prints
tab-separated rows with a header (or JSON with --json); other statements print
the number of affected rows. Without an argument the statement is read from
stdin. Every statement is recorded in the audit log.

On PostgreSQL (DATABASE_URL) the statement is PostgreSQL SQL; on the embedded
store it is SQLite SQL against the database file (its path is in the log).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var stmt string
			if len(args) == 1 {
				stmt = args[0]
			} else {
				b, err := io.ReadAll(io.LimitReader(a.stdin, 1<<20))
				if err != nil {
					return err
				}
				stmt = string(b)
			}
			if strings.TrimSpace(stmt) == "" {
				return usageError{"no SQL statement given"}
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			if err := a.admin.RecordAudit(cmd.Context(), nil, "admin.sql", map[string]any{"statement": truncate(stmt, 2000)}); err != nil {
				return err
			}
			switch st := a.store.(type) {
			case *postgres.Store:
				return runSQL(cmd.Context(), st, stmt, a.json, a.stdout)
			case *sqlite.Store:
				return runSQLite(cmd.Context(), st, stmt, a.json, a.stdout)
			}
			return usageError{"sql needs a PostgreSQL or SQLite store, not " + a.store.Name()}
		},
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func runSQL(ctx context.Context, pg *postgres.Store, stmt string, asJSON bool, w io.Writer) error {
	rows, err := pg.Pool().Query(ctx, stmt, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return sqlErr(err)
	}
	defer rows.Close()
	fields := rows.FieldDescriptions()
	var out []map[string]any
	if len(fields) > 0 && !asJSON {
		names := make([]string, len(fields))
		for i, f := range fields {
			names[i] = f.Name
		}
		fmt.Fprintln(w, strings.Join(names, "\t"))
	}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return sqlErr(err)
		}
		if asJSON {
			m := make(map[string]any, len(vals))
			for i, v := range vals {
				m[fields[i].Name] = v
			}
			out = append(out, m)
			continue
		}
		cells := make([]string, len(vals))
		for i, v := range vals {
			cells[i] = tsvCell(v)
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	if err := rows.Err(); err != nil {
		return sqlErr(err)
	}
	tag := rows.CommandTag()
	if len(fields) > 0 {
		if asJSON {
			if out == nil {
				out = []map[string]any{}
			}
			return json.NewEncoder(w).Encode(map[string]any{"rows": out})
		}
		return nil
	}
	if asJSON {
		return json.NewEncoder(w).Encode(map[string]any{"command": tag.String(), "rows_affected": tag.RowsAffected()})
	}
	fmt.Fprintf(w, "%s (%d rows affected)\n", tag.String(), tag.RowsAffected())
	return nil
}

func tsvCell(v any) string {
	if v == nil {
		return `\N`
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case time.Time:
		s = x.UTC().Format(time.RFC3339Nano)
	case []byte:
		s = fmt.Sprintf("\\x%x", x)
	case [16]byte:
		s = fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
	default:
		if b, err := json.Marshal(x); err == nil {
			s = string(b)
		} else {
			s = fmt.Sprint(x)
		}
	}
	return strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n", "\r", "\\r").Replace(s)
}

func sqlErr(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("sql: %w", err)
}

func (a *app) migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations (safe to run concurrently and repeatedly)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := config.Parse(a.get)
			if err != nil {
				return usageError{err.Error()}
			}
			st, err := env.OpenStore(cmd.Context(), env.Logger(os.Stderr))
			if err != nil {
				return err
			}
			a.store = st
			m, ok := st.(config.Migrator)
			if !ok {
				fmt.Fprintln(a.stdout, "this store needs no migrations")
				return nil
			}
			if err := m.Migrate(cmd.Context()); err != nil {
				return err
			}
			switch st := st.(type) {
			case *postgres.Store:
				cur, latest, err := st.SchemaVersion(cmd.Context())
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "schema is at version %d of %d\n", cur, latest)
				return nil
			case *sqlite.Store:
				cur, latest, err := st.SchemaVersion(cmd.Context())
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "schema is at version %d of %d (%s)\n", cur, latest, st.Path())
				return nil
			}
			fmt.Fprintln(a.stdout, "migrations applied")
			return nil
		},
	}
}

// openStore opens the store for a command that needs an existing one. On
// the embedded store it refuses, instead of creating an empty database, a
// data directory without one, and one whose schema is behind.
func (a *app) openStore(ctx context.Context) error {
	if a.client != nil {
		return nil
	}
	env, err := config.Parse(a.get)
	if err != nil {
		return usageError{err.Error()}
	}
	if path := env.SQLitePath(); path != "" {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: no Postgram store at %s: start postgram-server once (it creates it) or run `pgm-admin migrate`; "+
				"set POSTGRAM_DATA_DIR to use another directory, or DATABASE_URL for PostgreSQL", postgram.ErrUnavailable, path)
		}
	}
	if err := a.open(ctx); err != nil {
		return err
	}
	if st, ok := a.store.(*sqlite.Store); ok {
		cur, latest, err := st.SchemaVersion(ctx)
		if err != nil {
			return err
		}
		if cur < latest {
			return fmt.Errorf("%w: the store %s is at schema version %d of %d: run `pgm-admin migrate` (or start postgram-server)",
				postgram.ErrUnavailable, st.Path(), cur, latest)
		}
	}
	return nil
}

// runSQLite runs one statement on the embedded store's writer connection:
// rows as TSV (or JSON), else the number of rows the statement changed.
func runSQLite(ctx context.Context, st *sqlite.Store, stmt string, asJSON bool, w io.Writer) error {
	conn, err := st.AdminConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, stmt)
	if err != nil {
		return sqlErr(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return sqlErr(err)
	}
	if len(cols) > 0 && !asJSON {
		fmt.Fprintln(w, strings.Join(cols, "\t"))
	}
	out := []map[string]any{}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return sqlErr(err)
		}
		if asJSON {
			m := make(map[string]any, len(cols))
			for i, v := range vals {
				m[cols[i]] = v
			}
			out = append(out, m)
			continue
		}
		cells := make([]string, len(vals))
		for i, v := range vals {
			cells[i] = tsvCell(v)
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	if err := rows.Err(); err != nil {
		return sqlErr(err)
	}
	if err := rows.Close(); err != nil {
		return sqlErr(err)
	}
	if len(cols) > 0 {
		if asJSON {
			return json.NewEncoder(w).Encode(map[string]any{"rows": out})
		}
		return nil
	}
	verb := leadingKeyword(stmt)
	var n int64
	switch verb {
	case "INSERT", "UPDATE", "DELETE", "REPLACE", "WITH":
		// changes() counts the rows the last INSERT, UPDATE or DELETE of
		// this connection changed, not those its triggers changed.
		if err := conn.QueryRowContext(ctx, "SELECT changes()").Scan(&n); err != nil {
			return sqlErr(err)
		}
	}
	if asJSON {
		return json.NewEncoder(w).Encode(map[string]any{"command": verb, "rows_affected": n})
	}
	fmt.Fprintf(w, "%s (%d rows affected)\n", verb, n)
	return nil
}

// leadingKeyword returns the statement's first word in upper case, after
// white space and comments.
func leadingKeyword(stmt string) string {
	s := stmt
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		switch {
		case strings.HasPrefix(s, "--"):
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				s = s[i+1:]
				continue
			}
			return ""
		case strings.HasPrefix(s, "/*"):
			if i := strings.Index(s, "*/"); i >= 0 {
				s = s[i+2:]
				continue
			}
			return ""
		}
		break
	}
	end := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_')
	})
	if end < 0 {
		end = len(s)
	}
	return strings.ToUpper(s[:end])
}
