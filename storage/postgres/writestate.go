package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/writestate"
)

// writeTracer watches every statement of the store's pools: a write that
// fails because the disk is full (SQLSTATE 53100) or the database is
// read-only (25006) marks the store read-only; a write that changes rows
// clears it. It is installed by Open (a pool passed to New is not watched).
type writeTracer struct {
	st *writestate.Tracker
	// pos, when set (the store has read replicas), learns of every write
	// and its workspace, for the replicas' read-your-writes check.
	pos *positions
}

var (
	_ pgx.QueryTracer = writeTracer{}
	_ pgx.BatchTracer = writeTracer{}
)

// changed reports whether a statement with this tag changed rows.
func changed(tag pgconn.CommandTag) bool {
	return (tag.Insert() || tag.Update() || tag.Delete()) && tag.RowsAffected() > 0
}

func (w writeTracer) note(tag pgconn.CommandTag, err error) {
	if err == nil {
		if changed(tag) {
			w.st.Succeeded()
		}
		return
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return
	}
	switch pgErr.Code {
	case "53100": // disk_full
		w.st.Failed("disk full")
	case "25006": // read_only_sql_transaction
		w.st.Failed("the database is read-only")
	}
}

// position records a write of ctx's workspace once it may have committed:
// a statement that changed rows (committed at once outside a transaction),
// and every COMMIT.
func (w writeTracer) position(ctx context.Context, tag pgconn.CommandTag, err error) {
	if w.pos == nil || err != nil {
		return
	}
	if changed(tag) || tag.String() == "COMMIT" {
		ws, _ := ctx.Value(wsKey{}).(string)
		w.pos.wrote(ws)
	}
}

func (w writeTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (w writeTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	w.note(d.CommandTag, d.Err)
	w.position(ctx, d.CommandTag, d.Err)
}

// batchWrites marks a batch that changed rows: its implicit transaction
// commits at its end.
type batchWrites struct{ changed bool }

type batchKey struct{}

func (w writeTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	if w.pos == nil {
		return ctx
	}
	return context.WithValue(ctx, batchKey{}, &batchWrites{})
}

func (w writeTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	w.note(d.CommandTag, d.Err)
	if b, ok := ctx.Value(batchKey{}).(*batchWrites); ok && d.Err == nil && (changed(d.CommandTag) || d.CommandTag.String() == "COMMIT") {
		b.changed = true
	}
}

func (w writeTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchEndData) {
	if b, ok := ctx.Value(batchKey{}).(*batchWrites); ok && b.changed && d.Err == nil {
		ws, _ := ctx.Value(wsKey{}).(string)
		w.pos.wrote(ws)
	}
}

var _ driver.WriteStater = (*Store)(nil)

// ReadOnly implements driver.WriteStater: true while the last write
// failed because the disk is full (53100) or the database refused writes
// (25006), until a write changes rows again (or a minute passes without
// another failure), and whenever the server is a standby or its sessions
// are read-only (default_transaction_read_only).
func (s *Store) ReadOnly(ctx context.Context) (bool, string, error) {
	ctx = storeWide(ctx) // no workspace-scoped table
	var standby, readOnly bool
	err := s.pool.QueryRow(ctx, `SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'`).Scan(&standby, &readOnly)
	if err != nil {
		return false, "", fmt.Errorf("postgres: read-only check: %w", mapErr(err))
	}
	switch {
	case standby:
		return true, "the server is a standby (in recovery)", nil
	case readOnly:
		return true, "the database's sessions are read-only", nil
	}
	ro, why := s.writeState.ReadOnly()
	return ro, why, nil
}
