package driver

import (
	"context"
	"regexp"
	"time"

	"github.com/google/uuid"
)

// LifecycleStorage is the part of Storage that memory grooming, tasks and
// Markdown sync need: metadata-aware selection, a multi-write transaction
// and the per-file sync state. It is embedded in Storage.
type LifecycleStorage interface {
	// FindEntities returns one page of entities matching f and every
	// condition of q, ordered by q.Order, and the total number matching.
	FindEntities(ctx context.Context, ws string, f EntityFilter, q FindQuery, limit, offset int) ([]*Entity, int, error)
	// WriteBatch applies ops in order in ONE transaction: either every op
	// is applied or none is. An Update whose stored version differs from
	// Expected returns a *ConflictError (carrying the current entity) and
	// rolls the whole batch back; a missing entity ErrNotFound.
	WriteBatch(ctx context.Context, ws string, ops []BatchOp) error
	// SyncStates returns the sync state of the files of repo, by path:
	// every file when paths is nil, else only those listed. When f is not
	// nil, only the files whose entity f admits are returned.
	SyncStates(ctx context.Context, ws, repo string, paths []string, f *EntityFilter) ([]SyncFileState, error)
	// SyncRepos summarises the workspace's synced repositories: per repo,
	// how many files are synced and deleted and when one last synced,
	// counting only files whose entity f admits (every file when f is
	// nil), by repo name.
	SyncRepos(ctx context.Context, ws string, f *EntityFilter) ([]SyncRepo, error)
	// SessionContextClients lists the distinct client ids that own
	// non-archived session-context memories, in order.
	SessionContextClients(ctx context.Context, ws string) ([]string, error)
}

// FindQuery adds metadata conditions, an exact client id and an order to an
// EntityFilter.
type FindQuery struct {
	// Meta conditions are ANDed.
	Meta []MetaCond
	// ClientID, when non-nil, admits only entities written by this client.
	ClientID *string
	// Order is the result order (default OrderNewest).
	Order FindOrder
}

// FindOrder orders FindEntities results.
type FindOrder int

// Orders.
const (
	OrderNewest FindOrder = iota // created_at DESC, id DESC
	OrderOldest                  // created_at ASC, id ASC
)

// MetaOp compares a metadata text value.
type MetaOp string

// Metadata comparisons. Values compare as text (byte order), so timestamps
// must be written in one fixed-width UTC form (see formatMetaTime).
const (
	MetaEq      MetaOp = "="
	MetaLT      MetaOp = "<"
	MetaLE      MetaOp = "<="
	MetaGT      MetaOp = ">"
	MetaGE      MetaOp = ">="
	MetaMissing MetaOp = "missing" // the key is absent (or JSON null)
	MetaPresent MetaOp = "present" // the key is set
)

// MetaCond is one condition on metadata: Key is a top-level key or one
// nested level ("durable_grooming.outcome"), lower-case letters and '_'
// only (backends may interpolate it, so the library checks it).
type MetaCond struct {
	Key   string
	Op    MetaOp
	Value string
	// OrMissing also admits entities where the key is absent.
	OrMissing bool
}

// MetaKeyRE is the form every MetaCond.Key must have.
var MetaKeyRE = regexp.MustCompile(`^[a-z_]{1,40}(\.[a-z_]{1,40})?$`)

// BatchOp is one write of WriteBatch; exactly one of Create, Update, Edge
// and SyncState is set. Audit, when set, is appended in the same
// transaction.
type BatchOp struct {
	// Create inserts an entity (ID, timestamps and version set) with Chunks.
	Create *Entity
	// Update replaces the stored entity Update.ID when its version equals
	// Expected; non-nil Chunks replace its chunks and reset its enrichment
	// to pending (as Storage.UpdateEntity).
	Update   *Entity
	Expected int64
	Chunks   []ChunkInput
	// Edge inserts an edge, or updates the existing one with the same
	// (source, target, relation).
	Edge *BatchEdge
	// SyncState inserts or replaces the state of (repo, path).
	SyncState *SyncFileState
	// Retract deletes the edges whose origin is Retract.Origin and whose
	// source is one of Retract.Sources (a deleted entity's derived edges).
	Retract *RetractEdges
	Audit   *AuditEntry
}

// RetractEdges names the derived edges of one origin.
type RetractEdges struct {
	Origin  uuid.UUID
	Sources []string
}

// BatchEdge is an edge written by a batch.
type BatchEdge struct {
	ID         uuid.UUID
	SourceID   uuid.UUID
	TargetID   uuid.UUID
	Relation   string
	Confidence float64
	Source     string
	Metadata   map[string]any
	CreatedAt  time.Time
}

// Sync file states.
const (
	SyncStatusSynced  = "synced"
	SyncStatusDeleted = "deleted" // the file left the folder; its entity is archived
)

// SyncFileState is what the server knows of one synced file.
type SyncFileState struct {
	Repo       string    `json:"-"`
	Path       string    `json:"path"`
	SHA        string    `json:"sha"`
	EntityID   uuid.UUID `json:"entity_id"`
	Status     string    `json:"sync_status"`
	LastSynced time.Time `json:"last_synced"`
}

// SyncRepo summarises one synced repository (SyncRepos).
type SyncRepo struct {
	Repo       string
	Synced     int
	Deleted    int
	LastSynced time.Time
}
