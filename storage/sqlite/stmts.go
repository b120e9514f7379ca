package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps prepared statements of the read pool, keyed by SQL text.
// Preparing is a large share of a short query's cost with SQLite (the
// short reads of a few rows take longer to plan than to run), and
// database/sql re-prepares a cached *sql.Stmt on each pooled connection
// only once. Statement texts come from a bounded set (filters render lists
// as JSON parameters, so only which fields are set changes the text); the
// cache stops growing at stmtCacheMax anyway.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

const stmtCacheMax = 512

func (c *stmtCache) get(ctx context.Context, db *sql.DB, q string) (*sql.Stmt, bool, error) {
	c.mu.Lock()
	st, ok := c.m[q]
	c.mu.Unlock()
	if ok {
		return st, true, nil
	}
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.m[q]; ok {
		st.Close()
		return prev, true, nil
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	if len(c.m) >= stmtCacheMax {
		return st, false, nil // the caller closes it after use
	}
	c.m[q] = st
	return st, true, nil
}

// lookup returns q's cached statement, if any, without preparing it.
func (c *stmtCache) lookup(q string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[q]
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// query runs a read query through the statement cache.
func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, cached, err := s.stmts.get(ctx, s.r, q)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args...)
	if !cached {
		// Closing a statement while its rows are open defers the close
		// until the rows are closed.
		st.Close()
	}
	return rows, err
}

// rowScanner is a single-row result whose Scan reports a prepare error too.
type rowScanner struct {
	row *sql.Row
	err error
}

func (r rowScanner) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return r.row.Scan(dest...)
}

// queryRow runs a single-row read query through the statement cache.
func (s *Store) queryRow(ctx context.Context, q string, args ...any) rowScanner {
	st, cached, err := s.stmts.get(ctx, s.r, q)
	if err != nil {
		return rowScanner{err: err}
	}
	if !cached {
		defer st.Close()
	}
	return rowScanner{row: st.QueryRowContext(ctx, args...)}
}

// wtx is a transaction whose statements go through a statement cache:
// the write transactions' statements are a bounded set, and preparing
// them afresh on every write was a twentieth of the REST load's CPU.
// Its methods shadow sql.Tx's.
type wtx struct {
	*sql.Tx
	cache  *stmtCache
	missed []string
}

// stmt returns q's cached statement bound to the transaction, or nil
// (the caller then runs q directly). A statement not cached yet is noted
// in missed and prepared after the transaction (Store.write): preparing
// through the pool now would wait for the connection this transaction
// holds.
func (t *wtx) stmt(ctx context.Context, q string) *sql.Stmt {
	if t.cache == nil {
		return nil
	}
	st := t.cache.lookup(q)
	if st == nil {
		t.missed = append(t.missed, q)
		return nil
	}
	// Closed with the transaction; database/sql prepares it once per
	// connection.
	return t.Tx.StmtContext(ctx, st)
}

// PrepareContext returns q's cached statement bound to the transaction,
// or prepares it on the transaction when it is not cached yet.
func (t *wtx) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	if st := t.stmt(ctx, q); st != nil {
		return st, nil
	}
	return t.Tx.PrepareContext(ctx, q)
}

// ExecContext runs q through the cache.
func (t *wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st := t.stmt(ctx, q)
	if st == nil {
		return t.Tx.ExecContext(ctx, q, args...)
	}
	return st.ExecContext(ctx, args...)
}

// QueryContext runs q through the cache.
func (t *wtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st := t.stmt(ctx, q)
	if st == nil {
		return t.Tx.QueryContext(ctx, q, args...)
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs q through the cache.
func (t *wtx) QueryRowContext(ctx context.Context, q string, args ...any) rowScanner {
	st := t.stmt(ctx, q)
	if st == nil {
		return rowScanner{row: t.Tx.QueryRowContext(ctx, q, args...)}
	}
	return rowScanner{row: st.QueryRowContext(ctx, args...)}
}
