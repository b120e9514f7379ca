// Package sqlite is the embedded backend of Postgram: one SQLite database
// file, pure Go (modernc.org/sqlite, no cgo), no server. It implements
// driver.Storage (and driver.TermStatser) with the semantics of
// storage/postgres and passes the same conformance suite
// (storage/storagetest).
//
//	st, err := sqlite.Open(ctx, sqlite.Config{Path: "/home/me/.local/share/postgram/postgram.db"})
//	if err != nil { ... }
//	defer st.Close()
//	if err := st.Migrate(ctx); err != nil { ... }
//	client, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: e})
//
// # Files, durability and locking
//
// The database is one file in WAL mode (with SQLite's -wal and -shm
// companions), foreign keys on, synchronous=NORMAL by default: a write is in
// the WAL before the call returns, so every acknowledged write survives the
// process being killed (SIGKILL, a crash, the OOM killer); only an
// operating-system crash or power loss can roll back the last transactions,
// never corrupt the file. Config.Durable selects synchronous=FULL, one fsync
// per commit, which survives power loss too. Migrations are embedded SQL
// files versioned by PRAGMA user_version; PRAGMA application_id marks the
// file as a Postgram store. Open refuses, without writing to it, a file that
// is not a SQLite database, a SQLite database of another application and a
// store written by a newer Postgram. A full disk or an I/O error fails the
// write with an error wrapping driver.ErrUnavailable; SQLite rolls the
// transaction back and the file stays intact.
//
// All writes of a Store go through one connection (a pool of one), each in a
// BEGIN IMMEDIATE transaction, so the goroutines of a process queue in Go
// instead of contending for SQLite's lock, and other processes wait up to
// BusyTimeout for it. Reads use a separate pool of read-only connections,
// which WAL never blocks (reading with pread by default; see MmapBytes).
//
// # Keyword branch
//
// Each chunk's to_tsvector('simple', content) is computed in Go and stored
// with the chunk by query.Vector, the library's port of PostgreSQL's parser,
// with positions. Every process holds, per workspace, each chunk's content
// and stored tsvector and a posting list per lexeme (keywords.go), loaded
// at Open beside the vectors and kept current through change_log like
// them, so a probe compares lexemes byte for byte inside one workspace: a
// term's lexemes are ANDed, terms ORed, exactly as plainto_tsquery('simple',
// term) combined with && and || on PostgreSQL. (Migrations 001–005 kept an
// FTS5 table for this; 006 drops it.)
// Ranks are a port of ts_rank_cd (default weights, normalization 0) over
// the stored positions against the OR of all terms, with PostgreSQL's
// arithmetic, so they are equal to PostgreSQL's (testdata holds
// PostgreSQL 15's answers for 13,692 document/query pairs). Matching masks
// come from the same positions. TermFrequencies counts, per workspace, the
// chunks matching each term in the posting lists (capped, see
// termCountCap).
//
// # Vector branch
//
// Embeddings are little-endian float32 BLOBs. Every process keeps all of
// them in memory, per workspace and model, loaded at Open (by several read
// connections in parallel, on one snapshot), together with a 4-bit and an
// int8 code of each unit vector, their scales and the exact norms of their
// quantization errors. A search scores every admitted vector on the 4-bit
// codes (an eighth of the float32 memory traffic, AVX2 kernels on amd64),
// which bounds each exact cosine within an interval; the vectors whose
// upper bound reaches the k-th best lower bound get the narrower int8
// interval, and only those still in reach are ranked exactly from the
// float32 vectors, in float64. The result is exactly a full exact scan's,
// for every Strategy (the plan is reported as "exact"). Cosine similarities
// are computed in float64; pgvector accumulates in float32, so the two
// backends' similarities differ in about the seventh digit.
//
// The index follows the writes of every process through change_log, a table
// that triggers fill whenever an entity's filter attributes or a chunk's
// embedding change: before a search, a store checks PRAGMA data_version and,
// when the file changed, applies the entries it has not seen (or reloads,
// should they have been pruned). There is no driver.Notifier: the library
// then verifies API keys against the store on every request, so a
// revocation in any process applies at once, and workers in other processes
// find new work at their next poll.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/entcache"
	"github.com/postgram-go/postgram/internal/writestate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// ApplicationID marks a database file as a Postgram store (PRAGMA
// application_id, "PGRM").
const ApplicationID = 0x5047524d

// Config configures the store. Zero values take the documented defaults.
type Config struct {
	// Path is the database file. Required. Its directory is created (0700)
	// when missing.
	Path string
	// Logger receives operational messages. Default: discard.
	Logger *slog.Logger
	// BusyTimeout is how long a write waits for another process holding
	// the database's write lock. Default 10s.
	BusyTimeout time.Duration
	// ReadConns bounds the read pool. Default max(4, GOMAXPROCS).
	ReadConns int
	// Durable selects synchronous=FULL: the WAL is fsynced at every commit,
	// so acknowledged writes also survive power loss. Default false:
	// synchronous=NORMAL, which survives process crashes (see the package
	// documentation).
	Durable bool
	// CacheKiB is SQLite's page cache per connection. Default 16384 (16 MiB).
	CacheKiB int
	// ScanWorkers is how many goroutines rank one vector search. Default
	// GOMAXPROCS.
	ScanWorkers int
	// MmapBytes is how much of the file the read connections map into
	// memory (PRAGMA mmap_size). Every write invalidates SQLite's page
	// cache of every other connection; with the file mapped, re-reading a
	// page is a memory access instead of a pread and a copy, but every
	// read transaction after a write also unmaps the whole mapping, and an
	// I/O error while reading a mapped page (a failing disk) kills the
	// process with SIGBUS instead of returning an error. Since keyword and
	// vector candidates come from memory, a search reads few pages, and
	// under the load benchmark (80% searches, 20% writes) searches ran ~6%
	// faster unmapped. Default 0: not mapped; negative means 0 too.
	MmapBytes int64
	// EntityCacheBytes bounds the entities kept in memory for repeated
	// reads (the results of searches agents repeat), kept current through
	// change_log like the index. Default 64 MiB; negative disables it.
	EntityCacheBytes int64
}

func (c *Config) defaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.BusyTimeout <= 0 {
		c.BusyTimeout = 10 * time.Second
	}
	if c.ReadConns <= 0 {
		c.ReadConns = max(4, runtime.GOMAXPROCS(0))
	}
	if c.CacheKiB <= 0 {
		c.CacheKiB = 16 << 10
	}
	if c.ScanWorkers <= 0 {
		c.ScanWorkers = runtime.GOMAXPROCS(0)
	}
	c.MmapBytes = max(c.MmapBytes, 0)
	if c.EntityCacheBytes == 0 {
		c.EntityCacheBytes = 64 << 20
	}
	c.EntityCacheBytes = max(c.EntityCacheBytes, 0)
}

// Store is the SQLite backend.
type Store struct {
	cfg  Config
	path string
	log  *slog.Logger

	eventSignal driver.Broadcast // EventsSignal

	w     *sql.DB // the single writer connection
	r     *sql.DB // read-only pool
	watch *sql.DB // one connection that polls PRAGMA data_version

	idx    *index
	ents   *entcache.Cache // entities read recently (GetEntities)
	stmts  stmtCache       // prepared statements of the read pool
	wstmts stmtCache       // prepared statements of the write transactions (one connection)

	writes atomic.Int64 // write transactions, to pace change_log pruning
	closed atomic.Bool
	// writeState remembers writes failing for a full disk or a read-only
	// file (see ReadOnly).
	writeState writestate.Tracker

	mu     sync.RWMutex
	models map[int64]driver.ModelInfo // by id
}

var _ driver.Storage = (*Store)(nil)

// Open opens (creating when missing) the database at cfg.Path and, when its
// schema is current, loads the vector index. It refuses, without modifying
// it, a file that is not a SQLite database, a SQLite database that is not a
// Postgram store, and a store written by a newer Postgram. Call Migrate
// before using a new or older store.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg.defaults()
	if strings.TrimSpace(cfg.Path) == "" {
		return nil, fmt.Errorf("sqlite: %w", &driver.FieldError{Field: "path", Message: "must name the database file"})
	}
	path, err := filepath.Abs(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: database path %q: %w", cfg.Path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: cannot create the directory %s for the database: %w", dir, err)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("sqlite: %s is a directory, not a database file", path)
	}
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	// A new database file is readable by its owner only (SQLite gives the
	// WAL and shared-memory files the same mode): it holds notes and key
	// hashes.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("sqlite: cannot create the database file %s: %w", path, err)
	}
	registerDriver()
	s := &Store{cfg: cfg, path: path, log: cfg.Logger, models: map[int64]driver.ModelInfo{}}
	// Vet an existing database through a read-only connection before the
	// writer switches it to WAL, which would modify a foreign file.
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		if err := s.probe(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.openPools(ctx); err != nil {
		s.closePools()
		return nil, err
	}
	s.idx = newIndex(s)
	s.ents = entcache.New(cfg.EntityCacheBytes)
	ver, err := s.checkSchema(ctx, s.r)
	if err != nil {
		s.closePools()
		return nil, err
	}
	if ver == len(migrationNames()) {
		start := time.Now()
		if err := s.idx.load(ctx); err != nil {
			s.closePools()
			return nil, err
		}
		s.log.Info("sqlite store opened", "path", path, "vectors", s.idx.count(), "load", time.Since(start).String())
	} else {
		s.log.Info("sqlite store opened; migrations pending", "path", path, "schema_version", ver)
	}
	return s, nil
}

// sqliteMagic starts every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// checkHeader refuses an existing, non-empty file that is not a SQLite
// database before SQLite touches it (switching to WAL would write to it).
func checkHeader(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: cannot open the database %s: %w", path, err)
	}
	defer f.Close()
	var hdr [100]byte
	n, err := io.ReadFull(f, hdr[:])
	if n == 0 && (err == io.EOF || err == nil) {
		return nil // an empty file is an empty database
	}
	if n < len(sqliteMagic) || string(hdr[:len(sqliteMagic)]) != sqliteMagic {
		return fmt.Errorf("sqlite: %s is not a SQLite database, so not a Postgram store; it was left untouched", path)
	}
	return nil
}

// probe checks an existing database read-only.
func (s *Store) probe(ctx context.Context) error {
	u := url.URL{Scheme: "file", Path: s.path, OmitHost: true}
	db, err := sql.Open(driverName, u.String()+"?mode=ro&_pragma=busy_timeout("+strconv.FormatInt(s.cfg.BusyTimeout.Milliseconds(), 10)+")")
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", s.path, err)
	}
	defer db.Close()
	_, err = s.checkSchema(ctx, db)
	return err
}

func (s *Store) dsn(extra ...string) string {
	u := url.URL{Scheme: "file", Path: s.path, OmitHost: true}
	params := []string{
		"_pragma=busy_timeout(" + strconv.FormatInt(s.cfg.BusyTimeout.Milliseconds(), 10) + ")",
		"_pragma=foreign_keys(1)",
		"_pragma=cache_size(-" + strconv.Itoa(s.cfg.CacheKiB) + ")",
		"_pragma=temp_store(memory)",
	}
	params = append(params, extra...)
	return u.String() + "?" + strings.Join(params, "&")
}

func (s *Store) openPools(ctx context.Context) error {
	syncMode := "NORMAL"
	if s.cfg.Durable {
		syncMode = "FULL"
	}
	var err error
	s.w, err = sql.Open(driverName, s.dsn("_txlock=immediate", "_pragma=journal_mode(WAL)", "_pragma=synchronous("+syncMode+")",
		"_pragma=journal_size_limit(67108864)"))
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", s.path, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	// The writer connection switches the file to WAL; open it first so the
	// readers find WAL mode set.
	if err := s.w.PingContext(ctx); err != nil {
		return s.openErr(err)
	}
	s.r, err = sql.Open(driverName, s.dsn("_query_only=1", "_pragma=mmap_size("+strconv.FormatInt(s.cfg.MmapBytes, 10)+")"))
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", s.path, err)
	}
	s.r.SetMaxOpenConns(s.cfg.ReadConns)
	s.r.SetMaxIdleConns(s.cfg.ReadConns)
	s.r.SetConnMaxIdleTime(5 * time.Minute)
	if err := s.r.PingContext(ctx); err != nil {
		return s.openErr(err)
	}
	s.watch, err = sql.Open(driverName, s.dsn("_query_only=1"))
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", s.path, err)
	}
	s.watch.SetMaxOpenConns(1)
	s.watch.SetMaxIdleConns(1)
	s.watch.SetConnMaxLifetime(0)
	s.watch.SetConnMaxIdleTime(0)
	return nil
}

func (s *Store) openErr(err error) error {
	if code, ok := sqliteCode(err); ok && code&0xff == sqlite3.SQLITE_NOTADB {
		return fmt.Errorf("sqlite: %s is not a SQLite database, so not a Postgram store: %v", s.path, err)
	}
	if code, ok := sqliteCode(err); ok && code&0xff == sqlite3.SQLITE_CANTOPEN {
		return fmt.Errorf("sqlite: cannot open or create the database %s (check that its directory is writable): %v", s.path, err)
	}
	return fmt.Errorf("sqlite: open %s: %w", s.path, mapErr(err))
}

func (s *Store) closePools() {
	for _, db := range []*sql.DB{s.watch, s.r, s.w} {
		if db != nil {
			db.Close()
		}
	}
}

// Name implements driver.Storage.
func (s *Store) Name() string { return "sqlite" }

// Path returns the database file.
func (s *Store) Path() string { return s.path }

// Ping implements driver.Storage.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlite: store is closed: %w", driver.ErrUnavailable)
	}
	var one int
	if err := s.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("sqlite: ping: %w", mapErr(err))
	}
	return nil
}

// Close implements driver.Storage. It is safe to call more than once.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	// A passive checkpoint keeps the WAL small for the next open; SQLite
	// also checkpoints when the last connection closes.
	s.stmts.close()
	s.wstmts.close()
	var errs []error
	for _, db := range []*sql.DB{s.watch, s.r, s.w} {
		if err := db.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.idx.release()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// migrationNames lists the embedded migrations in order; migration i+1 is
// schema version i+1.
func migrationNames() []string {
	ents, err := migrationFS.ReadDir("migrations")
	if err != nil {
		panic(err) // embedded at build time
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sql") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// checkSchema reads the schema version and refuses foreign or newer
// databases. It returns the current version (0 for a new database).
func (s *Store) checkSchema(ctx context.Context, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var appID, ver, objects int
	err := db.QueryRowContext(ctx, `SELECT (SELECT application_id FROM pragma_application_id),
		(SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_schema)`).Scan(&appID, &ver, &objects)
	if err != nil {
		return 0, s.openErr(err)
	}
	latest := len(migrationNames())
	switch {
	case appID == 0 && ver == 0 && objects == 0:
		return 0, nil // a new, empty database
	case appID != ApplicationID:
		return 0, fmt.Errorf("sqlite: %s is a SQLite database but not a Postgram store (application_id %#x); it was left untouched", s.path, appID)
	case ver > latest:
		return 0, fmt.Errorf("sqlite: %s has schema version %d, written by a newer Postgram; this version supports up to %d: upgrade Postgram to open it",
			s.path, ver, latest)
	}
	return ver, nil
}

// Migrate applies the embedded migrations that have not run yet, each in
// one transaction with the version bump (PRAGMA user_version), and loads
// the vector index. It is idempotent and safe to run from several processes
// at once: the write lock serialises them.
func (s *Store) Migrate(ctx context.Context) error {
	names := migrationNames()
	for {
		done, err := s.migrateOne(ctx, names)
		if err != nil {
			return err
		}
		if done {
			break
		}
	}
	if err := s.fillHeads(ctx); err != nil {
		return err
	}
	if !s.idx.isLoaded() {
		if err := s.idx.load(ctx); err != nil {
			return err
		}
	}
	return nil
}

// fillHeads writes the head of every entity without one (written before
// migration 008 added heads, or by an older version), a batch per
// transaction.
func (s *Store) fillHeads(ctx context.Context) error {
	const batch = 500
	for {
		n := 0
		err := s.write(ctx, func(tx *wtx) error {
			rows, err := tx.QueryContext(ctx, "SELECT "+entityCols+`, e.rid FROM entities e
				WHERE NOT EXISTS (SELECT 1 FROM entity_heads h WHERE h.rid = e.rid) LIMIT ?`, batch)
			if err != nil {
				return err
			}
			type row struct {
				rid int64
				e   *driver.Entity
			}
			var todo []row
			for rows.Next() {
				var r row
				if r.e, err = scanEntity(rows, &r.rid); err != nil {
					rows.Close()
					return err
				}
				todo = append(todo, r)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, r := range todo {
				if err := putHead(ctx, tx, r.rid, r.e); err != nil {
					return err
				}
			}
			n = len(todo)
			return nil
		})
		if err != nil {
			return fmt.Errorf("sqlite: migrate: entity heads: %w", mapErr(err))
		}
		if n < batch {
			return nil
		}
	}
}

func (s *Store) migrateOne(ctx context.Context, names []string) (done bool, err error) {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("sqlite: migrate: %w", mapErr(err))
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("sqlite: migrate: %w", mapErr(err))
	}
	defer tx.Rollback()
	ver, err := s.checkSchema(ctx, tx)
	if err != nil {
		return false, err
	}
	if ver >= len(names) {
		return true, nil
	}
	body, err := migrationFS.ReadFile("migrations/" + names[ver])
	if err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return false, fmt.Errorf("sqlite: migrate: %s: %w", names[ver], mapErr(err))
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", ApplicationID, ver+1)); err != nil {
		return false, fmt.Errorf("sqlite: migrate: %w", mapErr(err))
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("sqlite: migrate: %w", mapErr(err))
	}
	s.log.Info("applied migration", "name", names[ver], "version", ver+1)
	return false, nil
}

// SchemaVersion returns the applied and the latest available schema versions.
func (s *Store) SchemaVersion(ctx context.Context) (current, latest int, err error) {
	if err := s.r.QueryRowContext(ctx, "SELECT user_version FROM pragma_user_version").Scan(&current); err != nil {
		return 0, 0, fmt.Errorf("sqlite: schema version: %w", mapErr(err))
	}
	return current, len(migrationNames()), nil
}

// write runs fn in a BEGIN IMMEDIATE transaction on the writer connection.
//
// (Group commit — one transaction for the writes queued during a commit,
// each in a savepoint — was measured: store p95 at 32 load clients 96 → 30
// ms. It was dropped because a process committing back to back left
// another process sharing the file almost no moment to take the write
// lock: SQLite's busy handler polls every 10–100 ms, and the other
// process's writes timed out.)
func (s *Store) write(ctx context.Context, fn func(tx *wtx) error) error {
	if s.closed.Load() {
		return fmt.Errorf("store is closed: %w", driver.ErrUnavailable)
	}
	stx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		s.noteWriteErr(err)
		return err
	}
	tx := &wtx{Tx: stx, cache: &s.wstmts}
	// Statements met for the first time are prepared once the connection
	// is free again, for the next writes.
	defer func() {
		for _, q := range tx.missed {
			st, cached, err := s.wstmts.get(ctx, s.w, q)
			if err != nil {
				return
			}
			if !cached {
				st.Close() // the cache is full
			}
		}
	}()
	if err := fn(tx); err != nil {
		tx.Rollback()
		s.noteWriteErr(err)
		return err
	}
	if err := tx.Commit(); err != nil {
		tx.Rollback()
		s.noteWriteErr(err)
		return err
	}
	s.writeState.Succeeded()
	if s.writes.Add(1)%4096 == 0 {
		s.pruneChangeLog(ctx)
	}
	return nil
}

// noteWriteErr records a write that failed because the disk is full, the
// file cannot be written or the device fails (see ReadOnly).
func (s *Store) noteWriteErr(err error) {
	code, ok := sqliteCode(err)
	if !ok {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EFBIG) {
			s.writeState.Failed("disk full")
		}
		return
	}
	switch code & 0xff {
	case sqlite3.SQLITE_FULL:
		s.writeState.Failed("disk full")
	case sqlite3.SQLITE_IOERR:
		s.writeState.Failed("disk I/O error (full disk, file size limit or failing device)")
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		s.writeState.Failed("the database file cannot be written")
	}
}

var _ driver.WriteStater = (*Store)(nil)

// ReadOnly implements driver.WriteStater: true while the last write
// failed because the disk is full (SQLITE_FULL, ENOSPC), a file size limit
// was reached, the device failed (SQLITE_IOERR) or the file cannot be
// written, until a write commits again (or a minute passes without another
// failure).
func (s *Store) ReadOnly(context.Context) (bool, string, error) {
	ro, why := s.writeState.ReadOnly()
	return ro, why, nil
}

// changeLogKeep is how many change_log entries survive pruning. A process
// whose index is further behind reloads it.
const changeLogKeep = 200_000

func (s *Store) pruneChangeLog(ctx context.Context) {
	_, err := s.w.ExecContext(ctx, `DELETE FROM change_log WHERE seq <= (SELECT max(seq) FROM change_log) - ?`, changeLogKeep)
	if err != nil {
		s.log.Warn("pruning the change log failed", "err", err)
	}
}

// EnsureModel implements driver.Storage.
func (s *Store) EnsureModel(ctx context.Context, want driver.ModelInfo) (int64, error) {
	if want.Dimensions <= 0 || want.Name == "" {
		return 0, &driver.FieldError{Field: "embedding_model", Message: "needs a name and positive dimensions"}
	}
	var id int64
	err := s.write(ctx, func(tx *wtx) error {
		var cur driver.ModelInfo
		err := tx.QueryRowContext(ctx, "SELECT id, provider, name, dimensions FROM embedding_models WHERE is_active").
			Scan(&id, &cur.Provider, &cur.Name, &cur.Dimensions)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return tx.QueryRowContext(ctx, `INSERT INTO embedding_models (provider, name, dimensions, is_active, created_at)
				VALUES (?, ?, ?, 1, ?)
				ON CONFLICT (provider, name, dimensions) DO UPDATE SET is_active = 1
				RETURNING id`, want.Provider, want.Name, want.Dimensions, micros(time.Now())).Scan(&id)
		case err != nil:
			return err
		}
		if cur != want {
			return &driver.ModelMismatchError{Active: cur, Configured: want}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, driver.ErrModelMismatch) {
			return 0, err
		}
		return 0, fmt.Errorf("sqlite: ensure embedding model: %w", mapErr(err))
	}
	s.mu.Lock()
	s.models[id] = want
	s.mu.Unlock()
	return id, nil
}

// ActiveModel implements driver.Storage.
func (s *Store) ActiveModel(ctx context.Context) (int64, driver.ModelInfo, bool, error) {
	var id int64
	var m driver.ModelInfo
	err := s.r.QueryRowContext(ctx, "SELECT id, provider, name, dimensions FROM embedding_models WHERE is_active").
		Scan(&id, &m.Provider, &m.Name, &m.Dimensions)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, m, false, nil
	}
	if err != nil {
		return 0, m, false, fmt.Errorf("sqlite: active model: %w", mapErr(err))
	}
	s.mu.Lock()
	s.models[id] = m
	s.mu.Unlock()
	return id, m, true, nil
}

// model returns a known model's info, loading it when needed.
func (s *Store) model(ctx context.Context, id int64) (driver.ModelInfo, error) {
	s.mu.RLock()
	m, ok := s.models[id]
	s.mu.RUnlock()
	if ok {
		return m, nil
	}
	err := s.r.QueryRowContext(ctx, "SELECT provider, name, dimensions FROM embedding_models WHERE id = ?", id).
		Scan(&m.Provider, &m.Name, &m.Dimensions)
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("sqlite: embedding model %d: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return m, fmt.Errorf("sqlite: embedding model %d: %w", id, mapErr(err))
	}
	s.mu.Lock()
	s.models[id] = m
	s.mu.Unlock()
	return m, nil
}

// micros converts t to stored form: microseconds since the Unix epoch, UTC
// (PostgreSQL's timestamptz resolution, truncated as pgx does).
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros converts a stored time back.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func timePtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

func sqliteCode(err error) (int, bool) {
	var se *msqlite.Error
	if errors.As(err, &se) {
		return se.Code(), true
	}
	return 0, false
}

// mapErr classifies driver errors into the library's sentinels with a
// message that says what happened.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	code, ok := sqliteCode(err)
	if !ok {
		if errors.Is(err, sql.ErrConnDone) || errors.Is(err, sql.ErrTxDone) || strings.Contains(err.Error(), "database is closed") {
			return &driver.BackendError{Kind: driver.ErrUnavailable, Err: err, Public: "the database connection is closed"}
		}
		return err
	}
	unavailable := func(public string) error {
		return &driver.BackendError{Kind: driver.ErrUnavailable, Err: err, Public: public}
	}
	switch code & 0xff {
	case sqlite3.SQLITE_FULL:
		return unavailable("the disk is full; the write was rolled back and the database is intact")
	case sqlite3.SQLITE_IOERR:
		return unavailable("disk I/O error (the disk may be full, a file size limit reached or the device failing); " +
			"the transaction was rolled back and the database is intact")
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return unavailable("another process holds the database's write lock beyond the busy timeout")
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		return unavailable("the database file cannot be written")
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return unavailable("the database file is damaged; restore it from a backup")
	case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_MISMATCH, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_RANGE:
		return &driver.BackendError{Kind: driver.ErrInvalidArgument, Err: err, Public: "the database rejected a value"}
	case sqlite3.SQLITE_INTERRUPT:
		return fmt.Errorf("%w: %v", context.Canceled, err)
	}
	return err
}

func isUniqueViolation(err error) bool {
	code, ok := sqliteCode(err)
	return ok && (code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}
