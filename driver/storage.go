package driver

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Storage is the seam between the library and a backend. Backends persist
// and retrieve candidates; every rule (validation, access control, ranking,
// fusion, retries) stays in the library. storage/storagetest holds the
// conformance suite every implementation must pass.
//
// Every method takes the workspace and must never read or write a row of
// another workspace. Entities returned are owned by the caller.
type Storage interface {
	GraphStorage // the knowledge graph (graph_storage.go)

	// Name identifies the backend ("postgres", "sqlite") for logs and health.
	Name() string
	// Ping checks that the store is reachable.
	Ping(ctx context.Context) error
	// Close releases the store's resources.
	Close() error

	// EnsureModel makes m the active embedding model when none is active and
	// returns the active model's id. It returns an error wrapping
	// ErrModelMismatch when another model is active.
	EnsureModel(ctx context.Context, m ModelInfo) (int64, error)
	// ActiveModel returns the active model, or ok=false when none is set.
	ActiveModel(ctx context.Context) (id int64, m ModelInfo, ok bool, err error)

	// CreateEntity inserts e (ID, timestamps and version set by the caller)
	// with its chunks in one transaction and signals pending work.
	// audit, when non-nil, is appended in the same transaction.
	CreateEntity(ctx context.Context, ws string, e *Entity, chunks []ChunkInput, audit *AuditEntry) error
	// GetEntity returns the entity or an error wrapping ErrNotFound.
	GetEntity(ctx context.Context, ws string, id uuid.UUID) (*Entity, error)
	// GetEntities returns the entities that exist among ids, in any order.
	GetEntities(ctx context.Context, ws string, ids []uuid.UUID) ([]*Entity, error)
	// UpdateEntity replaces the stored entity e.ID with e when its stored
	// version equals expectedVersion; e.Version is the new version. When
	// chunks is non-nil the entity's chunks are replaced and its enrichment
	// reset to pending in the same transaction. A stale version returns a
	// *ConflictError with the current entity; a missing one ErrNotFound.
	// audit, when non-nil, is appended in the same transaction.
	UpdateEntity(ctx context.Context, ws string, e *Entity, expectedVersion int64, chunks []ChunkInput, audit *AuditEntry) error
	// ListEntities returns one page of entities matching f, newest first,
	// and the total number matching. When maxBytes > 0 and the page's
	// contents add up to more than maxBytes, it stops reading and returns a
	// *PageTooLargeError saying how many entities fit (so memory stays
	// bounded by the budget, not by the page).
	ListEntities(ctx context.Context, ws string, f EntityFilter, limit, offset int, maxBytes int64) ([]*Entity, int, error)

	// VectorSearch returns up to q.Limit chunks nearest to q.Vector among
	// the entities f admits, nearest first.
	VectorSearch(ctx context.Context, ws string, q VectorQuery) (VectorResult, error)
	// KeywordProbe runs one probe of the keyword branch (see KeywordQuery).
	KeywordProbe(ctx context.Context, ws string, q KeywordQuery) ([]KeywordHit, error)
	// LexemeStats returns the workspace's corpus statistics for lexemes,
	// current as of the call (every committed write is reflected).
	LexemeStats(ctx context.Context, ws string, lexemes []string) (LexemeStats, error)
	// EdgeSummaries counts, per entity in ids, the edges whose other end f
	// admits, by relation.
	EdgeSummaries(ctx context.Context, ws string, ids []uuid.UUID, f EntityFilter) (map[uuid.UUID]EdgeSummary, error)
	// Neighbors returns the 1-hop neighbours of ids that f admits.
	Neighbors(ctx context.Context, ws string, ids []uuid.UUID, f EntityFilter) ([]Neighbor, error)

	StageQueue // stage_queue.go: claiming and failing embedding and extraction work
	// ChunksToEmbed returns, per entity among ids, its chunks that lack an
	// embedding for modelID, in chunk order.
	ChunksToEmbed(ctx context.Context, ws string, modelID int64, ids []uuid.UUID) (map[uuid.UUID][]ChunkInput, error)
	// EntityVectors returns, for up to limit entities f admits (most
	// recently updated first), the vector of the entity's first chunk under
	// modelID; entities without one are left out.
	EntityVectors(ctx context.Context, ws string, modelID int64, f EntityFilter, limit int) ([]EntityVector, error)
	// CompleteEmbedding stores the vectors and marks each job's entity
	// completed when its chunk generation is unchanged.
	CompleteEmbedding(ctx context.Context, ws string, modelID int64, done []EmbedResult) error
	// QueueStats summarises the enrichment queue over the entities f
	// admits (counts and failures alike); failureLimit > 0 also returns the
	// most recent failures.
	QueueStats(ctx context.Context, ws string, f EntityFilter, maxAttempts, failureLimit int) (QueueStatus, error)

	// GetQueryEmbedding returns a persisted query embedding and refreshes
	// its last use.
	GetQueryEmbedding(ctx context.Context, ws, clientID string, modelID int64, key []byte) ([]float32, bool, error)
	// PutQueryEmbedding persists a query embedding.
	PutQueryEmbedding(ctx context.Context, ws, clientID string, modelID int64, key []byte, vec []float32) error
	// PruneQueryEmbeddings deletes rows unused since before olderThan and
	// keeps at most maxPerClient rows per client (most recently used).
	PruneQueryEmbeddings(ctx context.Context, ws string, olderThan time.Time, maxPerClient int) (int, error)

	// CreateKey stores a key with the digest of its secret.
	CreateKey(ctx context.Context, ws string, k *APIKey, hash []byte, audit *AuditEntry) error
	// KeyByHash returns the key with this digest (revoked ones included)
	// and the stored digest, or ErrNotFound.
	KeyByHash(ctx context.Context, ws string, hash []byte) (*APIKey, []byte, error)
	// ListKeys lists keys, newest first.
	ListKeys(ctx context.Context, ws string) ([]APIKey, error)
	// RevokeKey marks a key revoked and tells every listener (EventKeyRevoked).
	RevokeKey(ctx context.Context, ws string, id uuid.UUID, at time.Time, audit *AuditEntry) error
	// RotateKey, in one transaction, sets the expiry of the unrevoked key
	// old to the earlier of its current expiry and oldExpires, inserts its
	// successor k (as CreateKey) and appends audit. An unknown or revoked
	// old key returns ErrNotFound and changes nothing.
	RotateKey(ctx context.Context, ws string, old uuid.UUID, oldExpires time.Time, k *APIKey, hash []byte, audit *AuditEntry) error
	// TouchKeys records last use times by key id.
	TouchKeys(ctx context.Context, ws string, used map[string]time.Time) error
	// AppendAudit appends an audit entry.
	AppendAudit(ctx context.Context, ws string, e *AuditEntry) error
	// ListAudit lists audit entries matching f, newest first.
	ListAudit(ctx context.Context, ws string, f AuditFilter) ([]AuditEntry, error)
	// PruneAudit deletes the audit entries of ws from before the cut-off
	// (the audit table refuses every other UPDATE and DELETE) and appends
	// audit, its Details["deleted"] set to how many it deleted, in the same
	// transaction. With dryRun it only counts them.
	PruneAudit(ctx context.Context, ws string, before time.Time, dryRun bool, audit *AuditEntry) (int, error)

	// Stats counts the workspace's entities and chunks and sizes the store.
	Stats(ctx context.Context, ws string) (StoreStats, error)

	LifecycleStorage  // memory_storage.go: grooming, tasks, Markdown sync
	ExtractionStorage // extract_storage.go: the LLM extraction queue
	ModelStorage      // model_storage.go: embedding models and re-embedding
	TransferStorage   // transfer_storage.go: export and import of a whole workspace
	BackupStorage     // backup_storage.go: one consistent snapshot of the whole store
	PurgeStorage      // purge_storage.go: hard deletion and scrubbing
	KeywordFiller     // search_storage.go: the keyword branch in one statement
	SimilarityScorer  // search_storage.go: similarities of chosen chunks
	TermStatser       // how common keyword terms are
	WriteStater       // whether writes fail for lack of space or a read-only database
	UserStorage       // users.go: web-app users and sessions
	OAuthStorage      // oauth.go: the OAuth authorization server's records
	JobStorage        // jobs.go: background jobs (ingestion)
	EventStorage      // jobs.go: the bounded event log behind live events
}

// PageTooLargeError is returned by ListEntities when a page's contents
// exceed the byte budget: Fit entities (the first of the page) fit in
// MaxBytes. The library turns it into a validation error on limit.
type PageTooLargeError struct {
	Fit      int
	MaxBytes int64
}

func (e *PageTooLargeError) Error() string {
	return fmt.Sprintf("the page's contents exceed %d bytes; the first %d entities fit", e.MaxBytes, e.Fit)
}

// StoreStats summarises a workspace for operators.
type StoreStats struct {
	EntitiesByType   map[string]int `json:"entities_by_type"`
	EntitiesByStatus map[string]int `json:"entities_by_status"`
	Entities         int            `json:"entities"`
	Chunks           int            `json:"chunks"`
	EmbeddedChunks   int            `json:"embedded_chunks"`
	Edges            int            `json:"edges"`
	Keys             int            `json:"keys"`
	AuditEntries     int            `json:"audit_entries"`
	// DatabaseBytes is the size of the whole database (all workspaces).
	DatabaseBytes int64 `json:"database_bytes"`
}

// TermStatser is implemented by stores that can estimate, without
// scanning, how common each keyword term is: the fraction of chunks that
// match it (0 when rare or unknown). The keyword branch's per-term
// fallback then probes terms rarest first and stops once the pool is full,
// instead of probing every term.
type TermStatser interface {
	// ok is false when the store has no statistics yet.
	TermFrequencies(ctx context.Context, ws string, terms []string) (freqs []float64, ok bool, err error)
}

// KeyVersioner is implemented by stores without a change feed whose API-key
// changes can be detected synchronously (the embedded SQLite store, which
// follows every process's writes through its change log). KeysVersion
// returns a number that differs from every earlier answer once any API key
// of the store was changed (other than its last use) or removed, by any
// process, for every change committed before the call. The library caches
// verified keys while the number stays the same.
type KeyVersioner interface {
	KeysVersion(ctx context.Context, ws string) (uint64, error)
}

// WriteStater is implemented by stores that notice when their writes fail
// for lack of space (a full disk, SQLITE_FULL, PostgreSQL's disk_full
// 53100) or because the database is read-only. ReadOnly reports it, with a
// short reason for operators (never a driver's message); Health then says
// the store is "read_only" and the status "degraded" (reads and searches
// still work).
type WriteStater interface {
	ReadOnly(ctx context.Context) (readOnly bool, reason string, err error)
}

// Notifier is implemented by stores that broadcast changes between
// processes (PostgreSQL LISTEN/NOTIFY). Listen blocks until ctx ends,
// calling h for every event for ws: EventConnected when the feed is (re)
// established, EventDisconnected when it is lost, EventWork when another
// process enqueued enrichment work and EventKeyRevoked when an API key was
// changed (revoked, rotated, edited or deleted, through the library or
// directly in the database).
type Notifier interface {
	Listen(ctx context.Context, ws string, h func(Event)) error
}

// EventKind classifies a store event.
type EventKind int

// Store events.
const (
	EventConnected EventKind = iota
	EventDisconnected
	EventWork
	EventKeyRevoked
	// EventAppended: another process appended to the workspace's event
	// log (EventStorage).
	EventAppended
)

// Event is a store change notification.
type Event struct {
	Kind EventKind
	ID   string // the key id for EventKeyRevoked ("" when any key may have changed)
}

// ChunkInput is one chunk to store with an entity.
type ChunkInput struct {
	ID      uuid.UUID
	Index   int
	Content string
	Start   int // byte offset in the entity's content
	End     int
}

// EntityFilter selects entities. The library builds it from the caller's
// request and principal; empty slices mean "any".
type EntityFilter struct {
	Types        []EntityType
	Statuses     []Status
	Visibilities []Visibility
	// Owner admits entities owned by Owner, by nobody ("") or by
	// OwnerShared (the reference system's meaning).
	Owner      string
	Tags       []string // every tag must be present
	MemoryRole MemoryRole
	// IncludeArchived admits status archived; otherwise archived entities
	// are excluded (unless Statuses names archived explicitly).
	IncludeArchived bool
	// ClientScoped hides session_context entities whose client_id differs
	// from ClientID.
	ClientScoped bool
	ClientID     string
	// UpdatedBefore/After bound updated_at when non-zero.
	UpdatedBefore time.Time
	UpdatedAfter  time.Time
}

// Strategy selects how the vector branch finds candidates.
type Strategy string

// Strategies.
const (
	StrategyAuto  Strategy = "auto"  // ANN for broad searches, exact for small filtered sets
	StrategyExact Strategy = "exact" // exact cosine ranking
	StrategyHNSW  Strategy = "hnsw"  // ANN index (falls back to exact when it cannot fill Limit)
)

// VectorQuery asks for the chunks nearest a query vector.
type VectorQuery struct {
	Filter   EntityFilter
	ModelID  int64
	Vector   []float32
	Limit    int
	Strategy Strategy
	// Also lists chunks whose similarity to Vector the caller needs anyway
	// (keyword candidates), answered in Similarities in the same call.
	Also []uuid.UUID
}

// VectorResult is a vector probe's answer.
type VectorResult struct {
	Hits []VectorHit
	// Plan says how it was answered: "exact", "hnsw" or "hnsw+exact".
	Plan string
	// Similarities holds the cosine similarity of each chunk of
	// VectorQuery.Also that has an embedding of the model.
	Similarities map[uuid.UUID]float64
}

// VectorHit is a chunk found by the vector branch.
type VectorHit struct {
	ChunkID    uuid.UUID
	EntityID   uuid.UUID
	Content    string
	Similarity float64   // cosine similarity, 1 - cosine distance
	UpdatedAt  time.Time // the entity's updated_at, for recency
}

// ProbeMode selects a keyword probe.
type ProbeMode int

// Keyword probe modes.
const (
	ProbeAll  ProbeMode = iota // chunks matching every term
	ProbeAny                   // chunks matching at least one term
	ProbeTerm                  // chunks matching Terms[Term]
)

// KeywordQuery is one keyword probe. Each term's lexemes (PostgreSQL
// "simple" parsing) are ANDed; the probe combines terms per Mode. Hits are
// capped at Limit in unspecified order and carry their rank against the OR
// of all Terms, the mask of matched terms and, when Vector is set, the
// cosine similarity of the chunk's embedding for ModelID.
type KeywordQuery struct {
	Filter  EntityFilter
	Terms   []string
	Mode    ProbeMode
	Term    int
	Limit   int
	Vector  []float32
	ModelID int64
	// Exclude lists chunks already in the pool, skipped by the probe.
	Exclude []uuid.UUID
	// Only, when non-empty, restricts the probe to these chunks (used to
	// score a pool chosen by bare probes). With ProbeAny the caller vouches
	// that every listed chunk matches a term, so backends may skip the
	// match test.
	Only []uuid.UUID
	// Bare asks only for ChunkID and EntityID (membership): backends may
	// skip ranking, masks, similarity and content.
	Bare bool
	// Alternatives, when set, holds per term further lexemes that match
	// the term on their own (ranking v2's inflection and typo expansions):
	// a term matches a chunk holding all of its own lexemes or any one of
	// its alternatives, in probes, masks and features alike.
	Alternatives [][]string
	// Features asks for each hit's Length, TF, HeadPos, HeadLen, Type and
	// Tags (ranking v2); Rank may then be left 0 (ranking v2 orders by
	// BM25 over the features).
	Features bool
}

// KeywordHit is a chunk found by a keyword probe.
type KeywordHit struct {
	ChunkID    uuid.UUID
	EntityID   uuid.UUID
	Content    string
	Rank       float64   // ts_rank_cd (or the backend's equivalent) against the OR query
	Matched    uint32    // bit i set when the chunk matches Terms[i]
	Similarity *float64  // nil when the chunk has no embedding or no Vector was given
	UpdatedAt  time.Time // the entity's updated_at, for recency
	// Length, TF and HeadPos are set when the query asked for Features.
	// Length is the chunk's number of lexeme positions. TF and HeadPos
	// have one entry per feature slot: each term's own lexemes, then each
	// term's Alternatives in turn. TF counts occurrences in the chunk (for
	// a term's own lexemes the least count among them, 0 unless all
	// occur); HeadPos is the first position in its entity's head
	// (rank.Head, stored with the entity; for a term's own lexemes the
	// earliest first position, 0 unless all occur), 0 when absent.
	Length  int32
	TF      []uint16
	HeadPos []uint16
	// HeadLen is the head's length in lexeme positions; Type and Tags are
	// the entity's (ranking v2 matches terms against them).
	HeadLen int32
	Type    EntityType
	Tags    []string
}

// LexemeStats are a workspace's corpus statistics (ranking v2's BM25).
type LexemeStats struct {
	// Chunks is the number of chunks in the workspace (every entity's,
	// archived ones included) and Length their total length in lexeme
	// positions.
	Chunks int64
	Length int64
	// DF maps each asked lexeme held by at least one chunk to the number
	// of chunks holding it; lexemes held by none are absent.
	DF map[string]int64
}

// EdgeSummary counts an entity's visible edges.
type EdgeSummary struct {
	Count     int             `json:"count"`
	Relations []RelationCount `json:"relations"`
}

// RelationCount is the number of edges with one relation.
type RelationCount struct {
	Relation string `json:"relation"`
	Count    int    `json:"count"`
}

// Neighbor is an entity one edge away from a seed.
type Neighbor struct {
	SeedID    uuid.UUID
	Entity    *Entity
	Relation  string
	Direction string // "outgoing" (seed is the source) or "incoming"
}

// EntityVector is an entity's representative vector (EntityVectors).
type EntityVector struct {
	EntityID uuid.UUID
	Vector   []float32
}

// EmbedJob is an entity leased for embedding, with its chunks to embed.
type EmbedJob struct {
	Lease
	Chunks []ChunkInput
}

// EmbedResult carries the vectors for one job.
type EmbedResult struct {
	EntityID   uuid.UUID
	Generation int64
	ChunkIDs   []uuid.UUID
	Vectors    [][]float32
}

// QueueStatus summarises asynchronous work.
type QueueStatus struct {
	Embedding  EmbeddingQueue   `json:"embedding"`
	Extraction *ExtractionQueue `json:"extraction"`
	Failures   []QueueFailure   `json:"failures,omitempty"`
}

// EmbeddingQueue counts entities by embedding state.
type EmbeddingQueue struct {
	Pending           int      `json:"pending"`
	Completed         int      `json:"completed"`
	Failed            int      `json:"failed"`
	RetryEligible     int      `json:"retry_eligible"`
	OldestPendingSecs *float64 `json:"oldest_pending_secs"`
}

// ExtractionQueue counts entities by extraction state.
type ExtractionQueue struct {
	Pending   int `json:"pending"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
}

// QueueFailure is a recent failure.
type QueueFailure struct {
	ID        uuid.UUID  `json:"id"`
	Type      EntityType `json:"type"`
	Kind      string     `json:"kind"` // "embedding" or "extraction"
	Error     string     `json:"error"`
	Path      string     `json:"path,omitempty"`
	UpdatedAt time.Time  `json:"updated_at"`
}
