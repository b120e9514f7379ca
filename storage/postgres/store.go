// Package postgres is the PostgreSQL + pgvector backend of Postgram: the
// shared, production store. It implements driver.Storage over a pgx/v5
// pool.
//
//	st, err := postgres.Open(ctx, postgres.Config{URL: dsn})
//	if err != nil { ... }
//	defer st.Close()
//	if err := st.Migrate(ctx); err != nil { ... }
//	client, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: e})
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/writestate"
	"github.com/postgram-go/postgram/migrations"
)

// Config configures the store. Zero values take the documented defaults.
type Config struct {
	// URL is a PostgreSQL connection string (DATABASE_URL). Required unless
	// a pool is passed to New.
	URL string
	// MaxConns bounds the pool. Default: pgx's default (4 or the number of CPUs).
	MaxConns int32
	// OwnerURL (DATABASE_MIGRATION_URL) connects as the role that owns
	// the schema, when URL connects as one that does not (a member of
	// postgram_app, subject to row-level security: see migration 013).
	// The owner runs the migrations, creates the vector indexes and does
	// the store-wide maintenance (head fill, statistics folds, work across
	// every workspace); everything else goes through URL. Empty: URL does
	// it all.
	OwnerURL string
	// NotifyChannel is the LISTEN/NOTIFY channel that wakes enrichment
	// workers in every process. Default "postgram_work".
	NotifyChannel string
	// EfSearch is hnsw.ef_search for ANN scans. Default 40 (pgvector's):
	// the relaxed iterative scan continues past it whenever a query's
	// LIMIT needs more rows. On the 6,000-chunk bench fixture recall@50
	// against exact ranking was 0.94 at 40 and 0.96 at 100, for 60% of
	// the buffer reads.
	EfSearch int
	// MaxScanTuples is hnsw.max_scan_tuples for iterative scans: how far an
	// ANN scan looks for rows passing the filters before the search falls
	// back to exact ranking. Default 2000.
	MaxScanTuples int
	// ExactThreshold: with StrategyAuto, searches whose filtered candidate
	// set has at most this many chunks rank exactly. Default 1000.
	ExactThreshold int
	// HNSWM and HNSWEfConstruction parameterise new HNSW indexes. Defaults 16 and 64.
	HNSWM, HNSWEfConstruction int
	// VectorIndex is the approximate-nearest-neighbour index of each
	// embedding model's chunks: VectorIndexHNSW (default),
	// VectorIndexBinary or VectorIndexNone. A store creates the index it
	// is configured for when it first meets a model (EnsureModel, which
	// postgram.New calls; writes to chunks wait while it builds) and
	// searches with it; an index of the other kind is left in place (drop
	// it to reclaim its space), except that VectorIndexNone drops both.
	VectorIndex VectorIndexKind
	// RerankCandidates: with VectorIndexBinary, how many chunks nearest in
	// Hamming distance an ANN scan takes from the index before ranking them
	// exactly by cosine similarity (it also raises hnsw.ef_search to at
	// least this). Default 400, at most 1000. On the million-chunk bench
	// fixture (bag-of-words test vectors, a hard case for any graph index)
	// recall@10 against exact ranking was 0.465 at 400 and 0.575 at 1000,
	// against 0.325 for the float index at ef_search 40 (README).
	RerankCandidates int
	// MemoryIndex (DATABASE_MEMORY_INDEX) keeps, for each workspace the
	// store searches, an in-process index of it (memindex.go): every
	// chunk's vector, text and tsvector, every entity's filter attributes
	// and head, and the entities searches return (EntityCacheBytes). It
	// loads in the background on the first search and is kept current
	// through the search_changes log that triggers fill, caught up before
	// each search, so a write is findable at once in every process. Vector
	// searches then rank exactly in this process (every chunk, no recall
	// loss), the keyword probe, fill and lexeme statistics run on the
	// SQLite store's in-memory keyword index (internal/kwindex), and
	// repeated results are not read again; until an index is ready,
	// searches go to PostgreSQL. Memory: about dims × 5.5 bytes per chunk
	// for its vector (8.3 KB at 1,536 dimensions: float32 and two quantised
	// codes; dims × 3.5 with MemoryIndexHalf) plus its text and tsvector
	// (the README's "A million chunks in memory" measures it at a million
	// chunks; set GOMEMLIMIT near the memory the process may use, so the
	// garbage collector keeps the heap under it). Pair it with VectorIndexNone when
	// every server of the database has it. Needs one PostgreSQL database
	// (not Citus: the log is read by transaction id). Default off.
	MemoryIndex bool
	// MemoryIndexHalf (DATABASE_MEMORY_INDEX_HALF) keeps the in-memory
	// index's vectors in half precision (IEEE binary16): 1,536-dimension
	// vectors take 5.4 KB instead of 8.5 with their codes. Vector searches
	// then rank exactly on the rounded vectors, whose similarities are
	// within about 10⁻³ of the float32 ones: recall@10 against PostgreSQL's
	// exact float32 ranking measured 0.99+ (README). Default off.
	MemoryIndexHalf bool
	// MemoryIndexCandidates (DATABASE_MEMORY_INDEX_CANDIDATES), when
	// positive, makes the in-memory index's vector searches (all but those
	// asking for exact ranking) rank a model's vectors by sign-code Hamming
	// distance first and rank exactly only the nearest this many (plan
	// "memory_approx"; vecscan.TopKApprox). Worth it at hundreds of
	// thousands of vectors per workspace, where the exact scan's first pass
	// costs tens of milliseconds; recall@10 against exact ranking is
	// measured in the README ("A million chunks in memory"). Default 0:
	// exact ranking.
	MemoryIndexCandidates int
	// EntityCacheBytes bounds, with MemoryIndex, the entities kept in
	// memory for the searches that return them again, kept current with
	// the index through search_changes (an entity row's change in any
	// column a read returns drops it). Default 64 MiB; negative disables it.
	EntityCacheBytes int64
	// ReadURLs (DATABASE_READ_URLS) are streaming replicas of URL's
	// database that serve searches and entity reads once they have
	// replayed the writes this process made in the read's workspace (the
	// primary serves them otherwise, and whenever a replica is down or
	// failing). Each gets a pool of MaxConns. Empty: every read goes to URL.
	ReadURLs []string
	// Logger receives operational messages. Default: discard.
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.NotifyChannel == "" {
		c.NotifyChannel = "postgram_work"
	}
	if c.EfSearch <= 0 {
		c.EfSearch = 40
	}
	if c.EntityCacheBytes == 0 {
		c.EntityCacheBytes = 64 << 20
	}
	if c.MaxScanTuples <= 0 {
		c.MaxScanTuples = 2000
	}
	if c.ExactThreshold <= 0 {
		c.ExactThreshold = 1000
	}
	if c.HNSWM <= 0 {
		c.HNSWM = 16
	}
	if c.HNSWEfConstruction <= 0 {
		c.HNSWEfConstruction = 64
	}
	if c.VectorIndex == "" {
		c.VectorIndex = VectorIndexHNSW
	}
	if c.RerankCandidates <= 0 {
		c.RerankCandidates = 400
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// VectorIndexKind names an approximate-nearest-neighbour index kind
// (Config.VectorIndex).
type VectorIndexKind string

const (
	// VectorIndexHNSW is pgvector's HNSW index over the full vectors
	// (cosine distance): exact distances inside the index, about
	// dims × 4 + 300 bytes per chunk, and at most 2,000 dimensions.
	VectorIndexHNSW VectorIndexKind = "hnsw"
	// VectorIndexBinary is an HNSW index over the vectors' signs
	// (binary_quantize, Hamming distance): dims / 8 bytes per vector in the
	// index, so a million 1,536-dimension chunks need about 0.5 GB of
	// index instead of 8 GB and models of up to 16,000 dimensions are
	// indexed. A search takes Config.RerankCandidates chunks from it and
	// ranks them by their full vectors' cosine similarity.
	VectorIndexBinary VectorIndexKind = "binary"
	// VectorIndexNone keeps no vector index: vector searches rank
	// exactly. It is meant for stores with Config.MemoryIndex, which rank
	// in process and ask PostgreSQL only while a copy loads: storing a
	// vector then no longer inserts it into an HNSW graph (16.8 ms of
	// PostgreSQL per chunk under the REST load bench, against 0.6 ms
	// without). The store drops a model's vector indexes of either kind
	// when it meets the model; without the memory index, every vector
	// search scans the model's chunks.
	VectorIndexNone VectorIndexKind = "none"
)

// Valid reports whether k names a kind this store knows.
func (k VectorIndexKind) Valid() bool {
	return k == VectorIndexHNSW || k == VectorIndexBinary || k == VectorIndexNone
}

// maxBinaryIndexedDims is the vector type's own limit (16,000 dimensions),
// below the 64,000 bits pgvector's HNSW indexes.
const maxBinaryIndexedDims = 16000

// indexedDims is the largest dimension count the configured vector index
// covers; models above it rank exactly.
func (s *Store) indexedDims() int {
	switch s.cfg.VectorIndex {
	case VectorIndexBinary:
		return maxBinaryIndexedDims
	case VectorIndexNone:
		return 0
	}
	return maxIndexedDims
}

// efSearch is hnsw.ef_search for the store's ANN scans: at least the
// rerank candidates with a binary index (pgvector's limit is 1000).
func (c *Config) efSearch() int {
	if c.VectorIndex == VectorIndexBinary {
		return min(1000, max(c.EfSearch, c.RerankCandidates))
	}
	return c.EfSearch
}

// validate checks the settings defaults cannot mend.
func (c *Config) validate() error {
	if !c.VectorIndex.Valid() {
		return fmt.Errorf("postgres: %w", &driver.FieldError{Field: "vector_index",
			Message: fmt.Sprintf("must be %q, %q or %q, not %q", VectorIndexHNSW, VectorIndexBinary, VectorIndexNone, c.VectorIndex)})
	}
	if c.RerankCandidates > 1000 {
		return fmt.Errorf("postgres: %w", &driver.FieldError{Field: "rerank_candidates",
			Message: fmt.Sprintf("must be at most 1000 (pgvector's hnsw.ef_search limit), not %d", c.RerankCandidates)})
	}
	return nil
}

// Store is the PostgreSQL backend.
type Store struct {
	pool    *pgxpool.Pool
	ownPool bool
	cfg     Config
	log     *slog.Logger

	eventSignal driver.Broadcast // EventsSignal
	numbering   numberer         // numbers committed events (eventsCommitted)
	feed        listener         // Listen's shared connection

	mu      sync.RWMutex
	models  map[int64]driver.ModelInfo // by id
	counts  map[string]countEntry      // broad vector candidate counts by workspace and model
	freqs   termFreqCache              // planner term frequencies
	lexemes lexemeCache                // lexemes of query terms
	// owner is the pool of Config.OwnerURL (two connections), or pool.
	owner    *pgxpool.Pool
	ownOwner bool
	// replicas serve reads (Config.ReadURLs); positions tracks this
	// process's writes for them (nil without replicas).
	replicas     []*replica
	positions    *positions
	nextReplica  atomic.Uint32
	readsReplica atomic.Int64
	readsPrimary atomic.Int64
	// annPool, when set, holds connections configured for ANN scans
	// (Open makes one; New, with a caller's pool, uses transactions).
	annPool *pgxpool.Pool
	// aborted counts transactions PostgreSQL aborted (deadlock or
	// serialization failure) and retryAborted ran again.
	aborted atomic.Int64
	// writeState remembers writes failing for a full disk or a read-only
	// database (fed by writeTracer, see ReadOnly).
	writeState *writestate.Tracker
	// mem holds the in-process vector copies (Config.MemoryIndex; nil
	// without).
	mem *memIndex
	// folding is set while a background fold of the lexeme statistics
	// runs (startFold); bg tracks the background goroutines (the folds and
	// foldLoop) so Close waits, after cancelling bgCtx.
	folding  atomic.Bool
	bg       sync.WaitGroup
	bgCtx    context.Context
	bgCancel context.CancelFunc
}

var _ driver.Storage = (*Store)(nil)
var _ driver.Notifier = (*Store)(nil)
var _ driver.TermStatser = (*Store)(nil)

// maxIndexedDims is pgvector's limit for HNSW on the vector type.
const maxIndexedDims = 2000

// Open connects to cfg.URL and checks the server.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg.defaults()
	if cfg.URL == "" {
		return nil, fmt.Errorf("postgres: %w", &driver.FieldError{Field: "database_url", Message: "must be set"})
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		// pgx's message may echo the password; do not wrap it verbatim.
		return nil, fmt.Errorf("postgres: %w", &driver.FieldError{Field: "database_url", Message: "is not a valid PostgreSQL connection string"})
	}
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	ws := &writestate.Tracker{}
	var pos *positions
	if len(cfg.ReadURLs) > 0 {
		pos = &positions{}
	}
	pc.ConnConfig.Tracer = writeTracer{st: ws, pos: pos}
	efSearch, maxScan := cfg.efSearch(), cfg.MaxScanTuples
	pc.PrepareConn = PrepareConn // row-level security: the operation's workspace
	pc.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		// The vector type exists once migrations ran; before that there is
		// nothing to register.
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT to_regtype('vector') IS NOT NULL").Scan(&ok); err != nil {
			return err
		}
		if ok {
			if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
				return err
			}
		}
		// JIT compilation costs hundreds of milliseconds and never pays off
		// for these short queries (and the forced ANN plans' disabled-node
		// costs would always trigger it). Parallel plans do not pay off
		// either: starting workers costs more than these queries, and at a
		// million chunks the planner chose them for narrow filters and the
		// keyword fill. postgram-bench search there, p95 excluding the
		// provider, PostgreSQL's default of 2 workers per gather (and
		// custom-planned fills) against none (and the generic fill),
		// alternating: 77-90 against 6-9 ms for a narrow filter, 54-58
		// against 47-54 for cold queries. (Index builds keep their
		// parallel workers: another setting.)
		_, err := conn.Exec(ctx, fmt.Sprintf("SET jit = off; SET max_parallel_workers_per_gather = 0; SET hnsw.ef_search = %d; SET hnsw.iterative_scan = relaxed_order; SET hnsw.max_scan_tuples = %d", efSearch, maxScan))
		return err
	}
	// ANN queries run on connections whose planner is told to walk the
	// HNSW index (annSettings), so they need no transaction of their own:
	// one round trip instead of four.
	apc := pc.Copy()
	apc.MaxConns = max(2, pc.MaxConns/2)
	base := pc.AfterConnect
	apc.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if err := base(ctx, conn); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, annSessionSettings)
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", driver.ErrUnavailable)
	}
	annPool, err := pgxpool.NewWithConfig(ctx, apc)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect: %w", driver.ErrUnavailable)
	}
	var owner *pgxpool.Pool
	if cfg.OwnerURL != "" {
		oc, err := pgxpool.ParseConfig(cfg.OwnerURL)
		if err != nil {
			pool.Close()
			annPool.Close()
			return nil, fmt.Errorf("postgres: %w", &driver.FieldError{Field: "database_migration_url", Message: "is not a valid PostgreSQL connection string"})
		}
		oc.MaxConns = 2
		oc.AfterConnect = pc.AfterConnect
		if owner, err = pgxpool.NewWithConfig(ctx, oc); err != nil {
			pool.Close()
			annPool.Close()
			return nil, fmt.Errorf("postgres: connect as owner: %w", driver.ErrUnavailable)
		}
	}
	var replicas []*replica
	closeAll := func() {
		pool.Close()
		annPool.Close()
		if owner != nil {
			owner.Close()
		}
		for _, r := range replicas {
			r.pool.Close()
			r.ann.Close()
		}
	}
	for i, u := range cfg.ReadURLs {
		field := fmt.Sprintf("database_read_urls[%d]", i)
		rc, err := pgxpool.ParseConfig(u)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("postgres: %w", &driver.FieldError{Field: field, Message: "is not a valid PostgreSQL connection string"})
		}
		rc.MaxConns = pc.MaxConns
		rc.PrepareConn = PrepareConn
		rc.AfterConnect = pc.AfterConnect
		ra := rc.Copy()
		ra.MaxConns = apc.MaxConns
		ra.AfterConnect = apc.AfterConnect
		// Pools connect lazily: a replica that is down at start only
		// sends its reads to the primary.
		rp, err := pgxpool.NewWithConfig(ctx, rc)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("postgres: %s: %w", field, driver.ErrUnavailable)
		}
		rap, err := pgxpool.NewWithConfig(ctx, ra)
		if err != nil {
			rp.Close()
			closeAll()
			return nil, fmt.Errorf("postgres: %s: %w", field, driver.ErrUnavailable)
		}
		replicas = append(replicas, &replica{name: fmt.Sprintf("%s:%d", rc.ConnConfig.Host, rc.ConnConfig.Port), pool: rp, ann: rap})
	}
	s := newStore(pool, cfg, func(s *Store) {
		s.writeState = ws
		s.ownPool = true
		s.annPool = annPool
		if owner != nil {
			s.owner, s.ownOwner = owner, true
		}
		s.replicas, s.positions = replicas, pos
	})
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// New wraps an existing pool; the caller keeps ownership of it. The pool's
// connections must have pgvector's types registered (pgvector-go's
// pgx.RegisterTypes in AfterConnect) once the schema exists.
func New(pool *pgxpool.Pool, cfg Config) *Store {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		// New cannot fail: the defaults stand in for what Open refuses.
		cfg.Logger.Warn("invalid vector index settings; using the defaults", "error", err)
		cfg.VectorIndex, cfg.RerankCandidates = VectorIndexHNSW, min(cfg.RerankCandidates, 1000)
	}
	return newStore(pool, cfg)
}

// newStore builds the store; setup, when given, completes it before its
// background goroutines start (they read what it sets).
func newStore(pool *pgxpool.Pool, cfg Config, setup ...func(*Store)) *Store {
	s := &Store{pool: pool, owner: pool, cfg: cfg, log: cfg.Logger, models: map[int64]driver.ModelInfo{}, counts: map[string]countEntry{},
		writeState: &writestate.Tracker{}}
	for _, f := range setup {
		f(s)
	}
	if cfg.MemoryIndex {
		s.mem = newMemIndex(s)
	}
	s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
	s.numbering.wake = make(chan struct{}, 1)
	s.bg.Add(2)
	go func() {
		defer s.bg.Done()
		s.foldLoop(s.bgCtx)
	}()
	go func() {
		defer s.bg.Done()
		s.numberLoop(s.bgCtx)
	}()
	return s
}

// Pool exposes the underlying pool (for admin tools).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Name implements driver.Storage.
func (s *Store) Name() string { return "postgres" }

// Ping implements driver.Storage.
func (s *Store) Ping(ctx context.Context) error {
	ctx = storeWide(ctx) // no workspace-scoped table
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: ping: %w", &driver.BackendError{Kind: driver.ErrUnavailable, Public: "cannot reach PostgreSQL", Err: err})
	}
	return nil
}

// Close implements driver.Storage.
func (s *Store) Close() error {
	s.bgCancel()
	s.bg.Wait()
	if s.ownPool {
		s.pool.Close()
	}
	if s.annPool != nil {
		s.annPool.Close()
	}
	for _, r := range s.replicas {
		r.pool.Close()
		r.ann.Close()
	}
	if s.ownOwner {
		s.owner.Close()
	}
	return nil
}

// versionTable records applied migrations.
const versionTable = "postgram_schema_version"

// Migrate applies the embedded migrations that have not run yet. It is
// idempotent and safe to run from several processes at once: tern holds a
// PostgreSQL advisory lock while it works.
func (s *Store) Migrate(ctx context.Context) error {
	conn, err := s.owner.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: acquire connection: %w", driver.ErrUnavailable)
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	if err := m.LoadMigrations(migrations.FS); err != nil {
		return fmt.Errorf("postgres: migrate: load: %w", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	// Connections opened before the vector extension existed lack its
	// types; drop them so every connection registers them afresh.
	s.pool.Reset()
	if s.owner != s.pool {
		s.owner.Reset()
	}
	if _, err := s.fillHeads(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	return nil
}

// SchemaVersion returns the applied and the latest available migration
// versions.
func (s *Store) SchemaVersion(ctx context.Context) (current, latest int32, err error) {
	ctx = storeWide(ctx) // no workspace-scoped table
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("postgres: acquire connection: %w", driver.ErrUnavailable)
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
	if err != nil {
		return 0, 0, err
	}
	if err := m.LoadMigrations(migrations.FS); err != nil {
		return 0, 0, err
	}
	cur, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, 0, err
	}
	return cur, int32(len(m.Migrations)), nil
}

// EnsureModel implements driver.Storage.
func (s *Store) EnsureModel(ctx context.Context, want driver.ModelInfo) (int64, error) {
	ctx = storeWide(ctx) // no workspace-scoped table
	if want.Dimensions <= 0 || want.Name == "" {
		return 0, &driver.FieldError{Field: "embedding_model", Message: "needs a name and positive dimensions"}
	}
	var id int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('postgram_embedding_models'))"); err != nil {
			return err
		}
		var cur driver.ModelInfo
		err := tx.QueryRow(ctx, "SELECT id, provider, name, dimensions FROM embedding_models WHERE is_active").
			Scan(&id, &cur.Provider, &cur.Name, &cur.Dimensions)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			err = tx.QueryRow(ctx, `INSERT INTO embedding_models (provider, name, dimensions, is_active)
				VALUES ($1, $2, $3, true)
				ON CONFLICT (provider, name, dimensions) DO UPDATE SET is_active = true
				RETURNING id`, want.Provider, want.Name, want.Dimensions).Scan(&id)
			if err != nil {
				return err
			}
			return s.createVectorIndex(ctx, tx, id, want.Dimensions)
		case err != nil:
			return err
		}
		if cur != want {
			return &driver.ModelMismatchError{Active: cur, Configured: want}
		}
		return s.createVectorIndex(ctx, tx, id, want.Dimensions)
	})
	if err != nil {
		if errors.Is(err, driver.ErrModelMismatch) {
			return 0, err
		}
		return 0, fmt.Errorf("postgres: ensure embedding model: %w", mapErr(err))
	}
	s.mu.Lock()
	s.models[id] = want
	s.mu.Unlock()
	return id, nil
}

// vectorIndexName is the name of model id's vector index of kind k.
func vectorIndexName(k VectorIndexKind, id int64) string {
	if k == VectorIndexBinary {
		return fmt.Sprintf("chunks_embedding_bq_m%d", id)
	}
	return fmt.Sprintf("chunks_embedding_hnsw_m%d", id)
}

// createVectorIndex builds the configured vector index for one model's
// chunks, partial on model_id: HNSW over embedding::vector(dims) (cosine),
// or over its binary quantisation (Hamming).
func (s *Store) createVectorIndex(ctx context.Context, tx pgx.Tx, id int64, dims int) error {
	if s.cfg.VectorIndex == VectorIndexNone {
		return s.dropVectorIndexes(ctx, tx, id)
	}
	if dims > s.indexedDims() {
		s.log.Warn("embedding dimensions exceed the vector index's limit; vector search will rank exactly",
			"dimensions", dims, "limit", s.indexedDims(), "vector_index", s.cfg.VectorIndex)
		return nil
	}
	name := vectorIndexName(s.cfg.VectorIndex, id)
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", name).Scan(&exists); err != nil || exists {
		return err
	}
	// Only the tables' owner may create an index: through OwnerURL when
	// this connection's role is not it.
	expr := fmt.Sprintf("(embedding::vector(%d)) vector_cosine_ops", dims)
	if s.cfg.VectorIndex == VectorIndexBinary {
		expr = fmt.Sprintf("(binary_quantize(embedding::vector(%d))::bit(%d)) bit_hamming_ops", dims, dims)
	}
	ddl := fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON chunks
		USING hnsw (%s) WITH (m = %d, ef_construction = %d)
		WHERE model_id = %d`, name, expr, s.cfg.HNSWM, s.cfg.HNSWEfConstruction, id)
	if s.owner != s.pool {
		_, err := s.owner.Exec(ctx, ddl)
		return err
	}
	_, err := tx.Exec(ctx, ddl)
	if isInsufficientPrivilege(err) {
		return fmt.Errorf("the vector index of embedding model %d is missing and this database role may not create it: "+
			"set DATABASE_MIGRATION_URL to connect as the schema's owner (%w)", id, err)
	}
	return err
}

// dropVectorIndexes drops model id's vector indexes of every kind
// (VectorIndexNone), through the owner's connection when this one's role
// is not the tables' owner.
func (s *Store) dropVectorIndexes(ctx context.Context, tx pgx.Tx, id int64) error {
	for _, k := range []VectorIndexKind{VectorIndexHNSW, VectorIndexBinary} {
		name := vectorIndexName(k, id)
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", name).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			continue
		}
		ddl := "DROP INDEX IF EXISTS " + name
		var err error
		if s.owner != s.pool {
			_, err = s.owner.Exec(ctx, ddl)
		} else {
			_, err = tx.Exec(ctx, ddl)
		}
		if isInsufficientPrivilege(err) {
			return fmt.Errorf("vector index %s is configured away (vector_index %q) and this database role may not drop it: "+
				"set DATABASE_MIGRATION_URL to connect as the schema's owner (%w)", name, VectorIndexNone, err)
		}
		if err != nil {
			return err
		}
		s.log.Info("dropped a vector index: vector_index is none", "index", name, "model", id)
	}
	return nil
}

// ActiveModel implements driver.Storage.
func (s *Store) ActiveModel(ctx context.Context) (int64, driver.ModelInfo, bool, error) {
	ctx = storeWide(ctx) // no workspace-scoped table
	var id int64
	var m driver.ModelInfo
	err := s.pool.QueryRow(ctx, "SELECT id, provider, name, dimensions FROM embedding_models WHERE is_active").
		Scan(&id, &m.Provider, &m.Name, &m.Dimensions)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, m, false, nil
	}
	if err != nil {
		return 0, m, false, fmt.Errorf("postgres: active model: %w", mapErr(err))
	}
	s.mu.Lock()
	s.models[id] = m
	s.mu.Unlock()
	return id, m, true, nil
}

// model returns a known model's info, loading it when needed.
func (s *Store) model(ctx context.Context, id int64) (driver.ModelInfo, error) {
	ctx = storeWide(ctx) // no workspace-scoped table
	s.mu.RLock()
	m, ok := s.models[id]
	s.mu.RUnlock()
	if ok {
		return m, nil
	}
	err := s.pool.QueryRow(ctx, "SELECT provider, name, dimensions FROM embedding_models WHERE id = $1", id).
		Scan(&m.Provider, &m.Name, &m.Dimensions)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, fmt.Errorf("postgres: embedding model %d: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return m, fmt.Errorf("postgres: embedding model %d: %w", id, mapErr(err))
	}
	s.mu.Lock()
	s.models[id] = m
	s.mu.Unlock()
	return m, nil
}

// KeyChannel is the LISTEN/NOTIFY channel on which a trigger of the
// api_keys table (migration 010) reports every change to a key other than
// its last use: "key:<schema>:<workspace>:<id>", or "key:<schema>:*" after
// a TRUNCATE (the schema of the table, so that installations in different
// schemas of one database ignore each other's changes).
const KeyChannel = "postgram_keys"

// mapErr classifies driver errors into the library's sentinels. The
// driver's text stays in the error for logs; a client is shown only the
// BackendError's public message (transport/apierror).
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "53100":
			return &driver.BackendError{Kind: driver.ErrUnavailable, Err: err,
				Public: "the database's disk is full; the write was rolled back (SQLSTATE 53100)"}
		case pgErr.Code == "25006":
			return &driver.BackendError{Kind: driver.ErrUnavailable, Err: err,
				Public: "the database is read-only; the write was rolled back (SQLSTATE 25006)"}
		case pgErr.Code[:2] == "08", pgErr.Code[:2] == "53", pgErr.Code[:2] == "57": // connection, resources, operator intervention
			return &driver.BackendError{Kind: driver.ErrUnavailable, Err: err,
				Public: "the database cannot serve the request right now (SQLSTATE " + pgErr.Code + ")"}
		case pgErr.Code[:2] == "22", pgErr.Code[:2] == "23": // data exception, integrity violation
			return &driver.BackendError{Kind: driver.ErrInvalidArgument, Err: err,
				Public: "the database rejected a value (SQLSTATE " + pgErr.Code + ")"}
		case pgErr.Code[:2] == "40": // a deadlock or serialization failure that persisted after a retry (inTx)
			return &driver.BackendError{Kind: driver.ErrUnavailable, Err: err,
				Public: "the database aborted the write to resolve contention with a concurrent one; retry"}
		}
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if strings.Contains(err.Error(), "closed pool") {
		return fmt.Errorf("%w: the store is closed", driver.ErrUnavailable)
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return &driver.BackendError{Kind: driver.ErrUnavailable, Err: err, Public: "the database connection failed"}
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return fmt.Errorf("%w: cannot connect to PostgreSQL", driver.ErrUnavailable)
	}
	return err
}
