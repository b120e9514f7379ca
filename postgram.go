package postgram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/chunk"
	"github.com/postgram-go/postgram/internal/rank"
	"github.com/postgram-go/postgram/internal/validate"
)

const (
	// DefaultWorkspace is the workspace of a single-user installation.
	DefaultWorkspace = "default"
	// KeyPrefix starts every API key.
	KeyPrefix = "pgm-"
)

var workspaceRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$`)

// Config configures a Client. Zero values take the documented defaults.
type Config struct {
	// Store is the backend. Required.
	Store driver.Storage
	// Workspace this client reads and writes. Default "default". Letters,
	// digits, '_', '.', '-'; at most 64 characters.
	Workspace string
	// Embedder produces vectors for chunks and queries. Nil means no vector
	// search: entities stay pending and search answers from keywords,
	// marked degraded.
	Embedder Embedder
	// Logger receives operational logs. Default: discard.
	Logger *slog.Logger
	// Chunking controls how content is split for indexing.
	Chunking ChunkingConfig
	// Search holds search defaults.
	Search SearchConfig
	// QueryCache configures the query-embedding cache.
	QueryCache QueryCacheConfig
	// Worker configures asynchronous enrichment.
	Worker WorkerConfig
	// Extraction configures LLM relation extraction (off without an
	// Extractor).
	Extraction ExtractionConfig
	// KeyPepper, when set, keys API-key digests with HMAC-SHA256
	// (API_KEY_PEPPER). Keep it outside the database; changing it
	// invalidates every key.
	KeyPepper []byte
	// KeyCacheTTL bounds how long a verified API key is trusted from the
	// in-process cache before the store is asked again. The cache is also
	// cleared at once when the store reports a key change (PostgreSQL's
	// change feed, SQLite's change log), so the TTL is the backstop for a
	// missed notification. Default 10 seconds; negative disables caching.
	KeyCacheTTL time.Duration
	// MaxResultBytes bounds the entity content one call loads and returns
	// (a List page, a task list, a graph expansion): a larger result is
	// refused with a validation error naming limit (or max_nodes) that says
	// how many items fit, so the caller pages instead of the server holding
	// hundreds of megabytes per request. Default 16 MiB; negative: no bound.
	MaxResultBytes int64
	// EventLogSize is how many change events (package feed's live
	// events) the store keeps per workspace for subscribers to resume
	// from; Start's maintenance prunes the rest hourly. Default 10,000.
	EventLogSize int
	// EventLogMaxAge drops change events older than this at the same
	// pruning. Default 7 days.
	EventLogMaxAge time.Duration
	// Now returns the current time. Default time.Now (tests override it).
	Now func() time.Time
}

// ChunkingConfig controls the chunker.
type ChunkingConfig struct {
	// Size is the maximum chunk length in characters (runes). Default 1000.
	Size int
	// Overlap is how many characters consecutive chunks share. Default 100.
	Overlap int
}

// SearchConfig holds search defaults.
type SearchConfig struct {
	// DefaultLimit is the number of results when a request names none. Default 10.
	DefaultLimit int
	// MaxLimit bounds a request's limit. Default 100.
	MaxLimit int
	// DefaultThreshold is the cosine floor when a request names none. Default 0.3.
	DefaultThreshold float64
	// VectorCandidates is how many chunks the vector branch retrieves:
	// max(VectorCandidates, 5 × limit), at most 200. Default 50.
	VectorCandidates int
	// Ranking orders what search finds unless a request names one.
	// Default RankingV2.
	Ranking RankingMode
	// Weights tunes ranking v2; nil takes DefaultRankingWeights (chosen
	// on the development part of the shipped quality benchmark). To tune
	// for a corpus of your own, start from DefaultRankingWeights and
	// measure with postgram-bench quality on your own labels.
	Weights *RankingWeights
}

// QueryCacheConfig configures the query-embedding cache.
type QueryCacheConfig struct {
	// Size is the in-process LRU capacity. Default 512; negative disables it.
	Size int
	// Secret keys the persisted cache's digests with HMAC-SHA256
	// (QUERY_EMBEDDING_CACHE_SECRET). Without it digests are plain SHA-256,
	// so a database reader can test whether a guessed query was run.
	Secret []byte
	// Retention is how long an unused persisted row is kept. Default 30 days.
	Retention time.Duration
	// MaxRowsPerClient bounds persisted rows per client. Default 2000.
	MaxRowsPerClient int
	// DisablePersist turns the persisted cache off.
	DisablePersist bool
}

// WorkerConfig configures asynchronous enrichment.
type WorkerConfig struct {
	// Concurrency is the number of claim loops Start runs. Default 2.
	Concurrency int
	// ClaimBatch is how many entities one claim leases. Default 32.
	ClaimBatch int
	// EmbedBatch is the most texts sent in one provider call (further capped
	// by the embedder's MaxBatch). Default 64.
	EmbedBatch int
	// MaxAttempts is the total number of embedding attempts: the first and
	// up to three retries. Default 4.
	MaxAttempts int
	// RetryBackoff is the wait before retrying a failure. Default 5 minutes.
	RetryBackoff time.Duration
	// Lease is how long a claim is held before another worker may take the
	// entity over (a crashed worker's work is not lost). Default 10 minutes.
	Lease time.Duration
	// PollInterval is the safety-net wake-up for retries coming due and
	// notifications missed while disconnected. New work wakes the worker at
	// once (in-process, and across processes when the store supports it).
	// Default 30 seconds.
	PollInterval time.Duration
	// BatchWait is the least time between one loop's claims, unless the
	// last claim came back full: work that arrives steadily (each write
	// wakes the worker) then waits up to this long and is claimed, embedded
	// and recorded in batches rather than one entity at a time, each batch
	// costing the store a claim, a read and a transaction. A write waits at
	// most this long more for its vectors; keyword search finds it at once.
	// Default 20 milliseconds; negative: claim as soon as woken.
	BatchWait time.Duration
	// MaintenanceInterval is how often the worker prunes the persisted
	// query cache. Default 1 hour.
	MaintenanceInterval time.Duration
	// KeyUseFlushInterval is how often buffered API-key last-use times are
	// written. Default 1 minute.
	KeyUseFlushInterval time.Duration
}

func (c *Config) defaults() {
	if c.Workspace == "" {
		c.Workspace = DefaultWorkspace
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.KeyCacheTTL == 0 {
		c.KeyCacheTTL = 10 * time.Second
	}
	if c.MaxResultBytes == 0 {
		c.MaxResultBytes = 16 << 20
	}
	if c.EventLogSize == 0 {
		c.EventLogSize = 10_000
	}
	if c.EventLogMaxAge == 0 {
		c.EventLogMaxAge = 7 * 24 * time.Hour
	}
	if c.Chunking.Size == 0 {
		c.Chunking.Size = 1000
	}
	if c.Chunking.Overlap == 0 {
		c.Chunking.Overlap = 100
	}
	s := &c.Search
	if s.DefaultLimit == 0 {
		s.DefaultLimit = 10
	}
	if s.MaxLimit == 0 {
		s.MaxLimit = 100
	}
	if s.DefaultThreshold == 0 {
		s.DefaultThreshold = 0.3
	}
	if s.VectorCandidates == 0 {
		s.VectorCandidates = 50
	}
	if s.Ranking == "" {
		s.Ranking = RankingV2
	}
	q := &c.QueryCache
	if q.Size == 0 {
		q.Size = 512
	}
	if q.Retention == 0 {
		q.Retention = 30 * 24 * time.Hour
	}
	if q.MaxRowsPerClient == 0 {
		q.MaxRowsPerClient = 2000
	}
	w := &c.Worker
	if w.Concurrency == 0 {
		w.Concurrency = 2
	}
	if w.ClaimBatch == 0 {
		w.ClaimBatch = 32
	}
	if w.EmbedBatch == 0 {
		w.EmbedBatch = 64
	}
	if w.MaxAttempts == 0 {
		w.MaxAttempts = 4
	}
	if w.RetryBackoff == 0 {
		w.RetryBackoff = 5 * time.Minute
	}
	if w.Lease == 0 {
		w.Lease = 10 * time.Minute
	}
	if w.PollInterval == 0 {
		w.PollInterval = 30 * time.Second
	}
	if w.BatchWait == 0 {
		w.BatchWait = 20 * time.Millisecond
	}
	if w.MaintenanceInterval == 0 {
		w.MaintenanceInterval = time.Hour
	}
	if w.KeyUseFlushInterval == 0 {
		w.KeyUseFlushInterval = time.Minute
	}
	c.Extraction.defaults()
}

func (c *Config) validate() error {
	if c.Store == nil {
		return validate.Invalid("store", "is required")
	}
	if !workspaceRE.MatchString(c.Workspace) {
		return validate.Invalid("workspace", "%q must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit", validate.Truncate(c.Workspace, 80))
	}
	if err := (chunk.Config{Size: c.Chunking.Size, Overlap: c.Chunking.Overlap}).Validate(); err != nil {
		return validate.Invalid("chunking", "%v", err)
	}
	if c.Search.DefaultThreshold < 0 || c.Search.DefaultThreshold > 1 {
		return validate.Invalid("search.default_threshold", "must be between 0 and 1")
	}
	if c.Search.MaxLimit < 1 || c.Search.DefaultLimit < 1 || c.Search.DefaultLimit > c.Search.MaxLimit {
		return validate.Invalid("search.default_limit", "must be between 1 and search.max_limit")
	}
	if w := c.Search.Weights; w != nil {
		if err := w.validate(); err != nil {
			return err
		}
	}
	if !c.Search.Ranking.Valid() {
		return validate.Invalid("search.ranking", "%q is not one of seed, v2", validate.Truncate(string(c.Search.Ranking), 40))
	}
	if c.EventLogSize < 1 || c.EventLogMaxAge < 0 {
		return validate.Invalid("event_log_size", "must be positive (and event_log_max_age not negative)")
	}
	w := c.Worker
	if w.Concurrency < 1 || w.ClaimBatch < 1 || w.EmbedBatch < 1 || w.MaxAttempts < 1 {
		return validate.Invalid("worker", "concurrency, claim_batch, embed_batch and max_attempts must be positive")
	}
	return c.Extraction.validate()
}

// Client is the entry point of the library, bound to one workspace. It is
// safe for concurrent use. Use As to act for an authenticated principal.
type Client struct {
	*core
	principal *Principal
	// sees is what the principal may read: its filter's conditions,
	// compiled on the first canSee (many requests never need them).
	seesOnce sync.Once
	sees     driver.Matcher
}

// core is the state shared by a Client and its principal views.
type core struct {
	cfg      Config
	store    driver.Storage
	ws       string
	embedder Embedder
	log      *slog.Logger
	chunkCfg chunk.Config

	modelID int64 // 0 when no embedder
	qcache  *queryCache
	// analyzer remembers recent query terms' analyses (ranking v2).
	analyzer rank.Analyzer

	wakeCh        chan struct{}
	extractWakeCh chan struct{}
	keys          *keyCache

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	running bool

	embedState atomic.Pointer[embedHealth]
}

type embedHealth struct {
	ok  bool
	err string
	at  time.Time
}

// New builds a Client. With an embedder it registers (or checks) the
// store's active embedding model: a store whose model differs returns an
// error wrapping ErrModelMismatch that says what to run.
func New(ctx context.Context, cfg Config) (*Client, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	co := &core{
		cfg:           cfg,
		store:         cfg.Store,
		ws:            cfg.Workspace,
		embedder:      cfg.Embedder,
		log:           cfg.Logger.With("workspace", cfg.Workspace),
		chunkCfg:      chunk.Config{Size: cfg.Chunking.Size, Overlap: cfg.Chunking.Overlap},
		wakeCh:        make(chan struct{}, 1),
		keys:          newKeyCache(),
		extractWakeCh: make(chan struct{}, 1),
	}
	if cfg.Embedder != nil {
		m := cfg.Embedder.Model()
		if m.Dimensions <= 0 || m.Name == "" {
			return nil, validate.Invalid("embedder", "model must have a name and positive dimensions")
		}
		id, err := cfg.Store.EnsureModel(ctx, m)
		if err != nil {
			return nil, err
		}
		co.modelID = id
	}
	co.qcache = newQueryCache(cfg.QueryCache)
	return &Client{core: co}, nil
}

// Workspace returns the client's workspace.
func (c *Client) Workspace() string { return c.ws }

// as returns a view of c that acts for p (Admin.As).
func (c *Client) as(p Principal) *Client {
	pp := p
	return &Client{core: c.core, principal: &pp}
}

// Principal returns the principal the client acts for, or nil for full
// (embedded, unauthenticated) access.
func (c *Client) Principal() *Principal { return c.principal }

// wake tells the in-process worker that work arrived.
func (c *core) wake() {
	select {
	case c.wakeCh <- struct{}{}:
	default:
	}
	c.wakeExtraction()
}

// wakeExtraction tells the in-process extraction loops that work may be
// due (new writes without an embedder, finished embeddings).
func (c *core) wakeExtraction() {
	select {
	case c.extractWakeCh <- struct{}{}:
	default:
	}
}

func (c *core) now() time.Time { return c.cfg.Now().UTC().Truncate(time.Microsecond) }

// resultBudget is the byte budget of one call's entities (0: none).
func (c *core) resultBudget() int64 { return max(0, c.cfg.MaxResultBytes) }

// tooLarge is the validation error for a result over the budget: field is
// the parameter that pages it (limit, max_nodes), fit how many items fit.
func (c *core) tooLarge(field string, fit int) error {
	mib := float64(c.resultBudget()) / (1 << 20)
	if fit == 0 {
		return validate.Invalid(field, "the first item alone holds more than %.4g MiB of content, the most one response may carry; fetch it by id", mib)
	}
	return validate.Invalid(field, "the result would hold more than %.4g MiB of content, the most one response may carry: only the first %d items fit; "+
		"request %s=%d or less and page with offset", mib, fit, field, fit)
}

// noteEmbed records the embedding provider's latest outcome for health.
func (c *core) noteEmbed(err error) {
	h := &embedHealth{ok: err == nil, at: c.now()}
	if err != nil {
		h.err = err.Error()
	}
	c.embedState.Store(h)
}

// Health describes the client's dependencies.
type Health struct {
	Status    string          `json:"status"` // "ok" or "degraded"
	Store     ComponentHealth `json:"store"`
	Embedding EmbeddingHealth `json:"embedding"`
}

// ComponentHealth is one dependency's state.
type ComponentHealth struct {
	Name  string `json:"name"`
	State string `json:"state"` // "ok", "read_only" or "unavailable"
	// Error explains a state other than ok, for operators: it may carry a
	// backend's or provider's own text, so open endpoints must not show it.
	Error string `json:"error,omitempty"`
}

// EmbeddingHealth is the embedding provider's state, from its most recent
// call (enrichment or search).
type EmbeddingHealth struct {
	State string `json:"state"` // "ok", "unknown", "failing" or "disabled"
	Model string `json:"model,omitempty"`
	Error string `json:"error,omitempty"`
}

// Health reports the store's reachability and the embedding provider's
// last known state. A failing provider makes the status "degraded" (writes
// and keyword search still work), and so does a store whose writes fail
// for lack of space or because it is read-only (store state "read_only",
// see WriteStater: reads and searches still work); an unreachable store
// returns an error wrapping ErrUnavailable too.
func (a *Admin) Health(ctx context.Context) (Health, error) {
	c := a.c
	h := Health{Status: "ok", Store: ComponentHealth{Name: c.store.Name(), State: "ok"}}
	if c.embedder == nil {
		h.Embedding.State = "disabled"
		h.Status = "degraded"
	} else {
		m := c.embedder.Model()
		h.Embedding.Model = m.Provider + "/" + m.Name
		switch s := c.embedState.Load(); {
		case s == nil:
			h.Embedding.State = "unknown"
		case s.ok:
			h.Embedding.State = "ok"
		default:
			h.Embedding.State = "failing"
			h.Embedding.Error = s.err
			h.Status = "degraded"
		}
	}
	if err := c.store.Ping(ctx); err != nil {
		h.Store.State = "unavailable"
		h.Store.Error = err.Error()
		h.Status = "unavailable"
		return h, fmt.Errorf("store: %w", errors.Join(ErrUnavailable, err))
	}
	{
		ro, why, err := c.store.ReadOnly(ctx)
		if err != nil {
			h.Store.State = "unavailable"
			h.Store.Error = err.Error()
			h.Status = "unavailable"
			return h, fmt.Errorf("store: %w", errors.Join(ErrUnavailable, err))
		}
		if ro {
			h.Store.State = "read_only"
			h.Store.Error = why
			h.Status = "degraded"
		}
	}
	return h, nil
}
