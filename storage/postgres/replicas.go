package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Read replicas (Config.ReadURLs, DATABASE_READ_URLS): searches and entity
// reads go to a streaming replica when it has replayed every write this
// process made in the workspace, so a write is findable at once by its
// writer, and to the primary otherwise.
//
// Writes are noticed by the primary pool's tracer (a statement that
// changed rows, or a COMMIT, marks the statement's workspace), with no
// round trip of their own. The first read after a workspace's writes asks
// the primary for its WAL insert position (pg_current_wal_insert_lsn(),
// which is past every commit that returned, even one made with
// synchronous_commit off, whose commit record may not be written out yet:
// pg_current_wal_lsn(), the write position, can be behind it); a replica
// serves the read if its replay position (pg_last_wal_replay_lsn(),
// remembered, asked again only when it is behind) has reached it. A
// replica that cannot be reached, or that cancels a query in conflict with
// recovery, gets the read sent to the primary instead, and is left alone
// for a few seconds after a connection failure: reads never fail because
// of a replica.

// replica is one read replica.
type replica struct {
	name string // host:port, for logs
	pool *pgxpool.Pool
	ann  *pgxpool.Pool // connections with the ANN session settings
	// replay is the last replay position read from the replica.
	replay atomic.Uint64
	// downUntil (unix nanoseconds) keeps reads away after a failure.
	downUntil atomic.Int64
}

// replicaDownFor is how long a replica that failed is left alone.
const replicaDownFor = 5 * time.Second

// positions tracks, per workspace, the writes this process made and the
// primary's WAL position read after them.
type positions struct {
	mu sync.Mutex
	ws map[string]*wsPosition
	// all counts writes of operations without a workspace (they may touch
	// any): every workspace's position is read again after one.
	all uint64
}

type wsPosition struct {
	writes uint64 // bumped by every write
	// seen is the writes count (and all count) when lsn was read.
	seen, seenAll uint64
	lsn           uint64
}

// wrote records a write in ws ("" or store-wide: every workspace).
func (p *positions) wrote(ws string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ws == "" || ws == anyWorkspace {
		p.all++
		return
	}
	if p.ws == nil {
		p.ws = map[string]*wsPosition{}
	}
	w := p.ws[ws]
	if w == nil {
		w = &wsPosition{}
		p.ws[ws] = w
	}
	w.writes++
}

// need returns the WAL position a replica must have replayed to serve a
// read of ws, reading the primary's position when writes happened since
// it was last read (0: no write of this process to wait for).
func (s *Store) need(ctx context.Context, ws string) (uint64, error) {
	p := s.positions
	p.mu.Lock()
	w := p.ws[ws]
	if w == nil {
		if p.all == 0 {
			p.mu.Unlock()
			return 0, nil
		}
		if p.ws == nil {
			p.ws = map[string]*wsPosition{}
		}
		w = &wsPosition{}
		p.ws[ws] = w
	}
	writes, all := w.writes, p.all
	if writes == w.seen && all == w.seenAll {
		lsn := w.lsn
		p.mu.Unlock()
		return lsn, nil
	}
	p.mu.Unlock()
	var text string
	if err := s.pool.QueryRow(storeWide(ctx), "SELECT pg_current_wal_insert_lsn()::text").Scan(&text); err != nil {
		return 0, err
	}
	lsn, err := parseLSN(text)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	if lsn > w.lsn {
		w.lsn = lsn
	}
	// Writes marked while the position was read are covered only if
	// their commit came first: count them as seen only up to the counts
	// read before asking.
	if writes > w.seen {
		w.seen = writes
	}
	if all > w.seenAll {
		w.seenAll = all
	}
	lsn = w.lsn
	p.mu.Unlock()
	return lsn, nil
}

// parseLSN reads a pg_lsn's text form, "16/B374D848".
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, fmt.Errorf("postgres: %q is not a WAL position", s)
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("postgres: %q is not a WAL position", s)
	}
	return h<<32 | l, nil
}

// reader is where one read runs: the primary's pools or a replica's.
type reader struct {
	pool *pgxpool.Pool
	ann  *pgxpool.Pool // nil: ANN scans take a transaction on pool
	rep  *replica      // nil on the primary
}

// primary is the reader of the primary.
func (s *Store) primary() reader { return reader{pool: s.pool, ann: s.annPool} }

// pickReader returns a replica that has replayed what ws's reads must
// see, or the primary.
func (s *Store) pickReader(ctx context.Context, ws string) reader {
	if len(s.replicas) == 0 {
		return s.primary()
	}
	need, err := s.need(ctx, ws)
	if err != nil {
		return s.primary()
	}
	now := time.Now().UnixNano()
	start := int(s.nextReplica.Add(1))
	for i := range s.replicas {
		r := s.replicas[(start+i)%len(s.replicas)]
		if r.downUntil.Load() > now {
			continue
		}
		if need == 0 || r.replay.Load() >= need {
			return reader{pool: r.pool, ann: r.ann, rep: r}
		}
		// Behind as last seen: ask again, once.
		var text *string
		qctx, cancel := context.WithTimeout(storeWide(ctx), time.Second)
		err := r.pool.QueryRow(qctx, "SELECT pg_last_wal_replay_lsn()::text").Scan(&text)
		cancel()
		if err != nil {
			s.replicaFailed(r, err)
			continue
		}
		if text == nil { // not a standby: it is a primary of its own
			s.replicaFailed(r, errors.New("the server is not a standby (pg_last_wal_replay_lsn() is NULL)"))
			continue
		}
		lsn, err := parseLSN(*text)
		if err != nil {
			continue
		}
		if lsn > r.replay.Load() {
			r.replay.Store(lsn)
		}
		if lsn >= need {
			return reader{pool: r.pool, ann: r.ann, rep: r}
		}
	}
	s.readsPrimary.Add(1)
	return s.primary()
}

// replicaFailed leaves r alone for a while after a failure.
func (s *Store) replicaFailed(r *replica, err error) {
	r.downUntil.Store(time.Now().Add(replicaDownFor).UnixNano())
	s.log.Warn("read replica failed: reads go to the primary", "replica", r.name, "for", replicaDownFor.String(), "err", err)
}

// read runs f on a reader for ws: a replica when one may serve it, and
// again on the primary when the replica fails (unreachable, or a query
// cancelled in conflict with recovery).
func (s *Store) read(ctx context.Context, ws string, f func(reader) error) error {
	r := s.pickReader(ctx, ws)
	err := f(r)
	if r.rep == nil {
		return err
	}
	if err == nil {
		s.readsReplica.Add(1)
		return nil
	}
	if !replicaTrouble(ctx, err) {
		return err
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) { // the connection, not the query
		s.replicaFailed(r.rep, err)
	}
	s.readsPrimary.Add(1)
	return f(s.primary())
}

// replicaTrouble reports whether err is the replica's fault rather than
// the read's: a connection failure, a server shutting down, or a query
// cancelled in conflict with recovery.
func replicaTrouble(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "40001" && strings.Contains(pgErr.Message, "recovery"): // conflict with recovery
			return true
		case pgErr.Code[:2] == "08", pgErr.Code[:2] == "57": // connection, operator intervention
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

type readerKey struct{}

// withReader marks ctx as a read on r.
func withReader(ctx context.Context, r reader) context.Context {
	return context.WithValue(ctx, readerKey{}, r)
}

// rd returns the reader ctx's read runs on (withReader), or the primary.
func (s *Store) rd(ctx context.Context) reader {
	if r, ok := ctx.Value(readerKey{}).(reader); ok {
		return r
	}
	return s.primary()
}

// ReadStats counts where reads went since the store opened.
type ReadStats struct {
	Replicas int   `json:"replicas"`
	Replica  int64 `json:"replica"` // reads a replica served
	Primary  int64 `json:"primary"` // reads sent to the primary (a replica behind, down or failing)
}

// ReadStats reports how reads were routed (Config.ReadURLs).
func (s *Store) ReadStats() ReadStats {
	return ReadStats{Replicas: len(s.replicas), Replica: s.readsReplica.Load(), Primary: s.readsPrimary.Load()}
}

// readVal runs f on a reader for ws (read), passing it in ctx.
func readVal[T any](s *Store, ctx context.Context, ws string, f func(context.Context) (T, error)) (T, error) {
	var out T
	err := s.read(ctx, ws, func(r reader) error {
		v, err := f(withReader(ctx, r))
		out = v
		return err
	})
	return out, err
}
