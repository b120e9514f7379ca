package driver

import (
	"context"

	"github.com/google/uuid"
)

// GraphStorage is the part of Storage that persists the knowledge graph.
// Backends store and find edges; the library decides who may see them,
// validates them and builds graphs from them.
type GraphStorage interface {
	ExpandLevelStorage // one breadth-first step of Expand in the database

	// UpsertEdges inserts edges or, for an existing (source_id, target_id,
	// relation), updates its confidence, source, provenance and updated_at
	// and merges its metadata (new keys win), in one transaction with
	// audit (when non-nil). An existing edge is only replaced by one of at
	// least its precedence: manual edges by manual ones only; llm-extraction
	// and other derived edges by anything but semantic-neighbor; and
	// semantic-neighbor by anything. It returns the edges written, in input
	// order (an input blocked by precedence is left out).
	UpsertEdges(ctx context.Context, ws string, edges []Edge, audit *AuditEntry) ([]Edge, error)
	// GetEdge returns an edge or an error wrapping ErrNotFound.
	GetEdge(ctx context.Context, ws string, id uuid.UUID) (*Edge, error)
	// DeleteEdges deletes the listed edges (with audit, when non-nil, in the
	// same transaction) and returns how many existed.
	DeleteEdges(ctx context.Context, ws string, ids []uuid.UUID, audit *AuditEntry) (int, error)
	// FindEdges returns the edges q selects, highest confidence first, then
	// by id.
	FindEdges(ctx context.Context, ws string, q EdgeQuery) ([]Edge, error)
	// ReplaceDerivedEdges, in one transaction, deletes the edges whose
	// origin is origin and whose source is source, then upserts edges (with
	// UpsertEdges' precedence) and appends audit (when non-nil). It returns
	// how many edges it deleted.
	ReplaceDerivedEdges(ctx context.Context, ws string, origin uuid.UUID, source string, edges []Edge, audit *AuditEntry) (int, error)
	// ChunkVectors returns the stored embeddings (for modelID) of an
	// entity's chunks, in chunk order; chunks without one are left out.
	ChunkVectors(ctx context.Context, ws string, entityID uuid.UUID, modelID int64) ([][]float32, error)
}

// EdgeQuery selects edges for FindEdges.
type EdgeQuery struct {
	// IDs, when non-empty, selects the edges incident to these entities:
	// Direction "source" those whose source_id is listed, "target" those
	// whose target_id is, "both" (or "") either. Empty selects every edge
	// of the workspace.
	IDs       []uuid.UUID
	Direction EdgeDirection
	// Among keeps only edges with both ends in IDs.
	Among bool
	// Relations and Sources, when non-empty, restrict relation and source.
	Relations []string
	Sources   []string
	// OriginIDs, when non-empty, restricts origin_id.
	OriginIDs []uuid.UUID
	// MinConfidence keeps confidence >= MinConfidence; Below, when > 0,
	// keeps confidence < Below.
	MinConfidence float64
	Below         float64
	// Filter, when non-nil, keeps only edges whose both ends it admits.
	Filter *EntityFilter
	// Limit bounds the result; 0 means no bound.
	Limit int
}

// ExpandLevelQuery is one breadth-first step of Expand (see
// ExpandLevelStorage).
type ExpandLevelQuery struct {
	// Frontier holds the entities reached at the previous depth; Seen every
	// entity reached so far, the frontier included.
	Frontier []uuid.UUID
	Seen     []uuid.UUID
	// Relations, when non-empty, and MinConfidence restrict the edges
	// followed, as in EdgeQuery.
	Relations     []string
	MinConfidence float64
	// Filter, when non-nil, must admit an entity for it to be reached (the
	// frontier's entities are vouched for by the caller).
	Filter *EntityFilter
	// Limit is how many entities to return at most; 0 asks only whether
	// any would be.
	Limit int
}

// ExpandLevelStorage is implemented by graph stores that can take one step
// of Expand's breadth-first walk in the database, so that only the ids of
// the entities reached travel, not every edge incident to the frontier.
// Expand uses it when the store has it and FindEdges otherwise; both give
// the same graph.
type ExpandLevelStorage interface {
	// ExpandLevel returns the entities outside q.Seen that share an edge q
	// admits with an entity of q.Frontier, each ranked by the first such
	// edge in FindEdges' order (highest confidence, then edge id), best
	// first: at most q.Limit of them, and whether there are more.
	ExpandLevel(ctx context.Context, ws string, q ExpandLevelQuery) (ids []uuid.UUID, more bool, err error)
}
