package driver

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// ExtractionStorage is the part of Storage that runs the extraction queue.
// It mirrors the embedding queue: leases taken without double-processing
// (FOR UPDATE SKIP LOCKED on PostgreSQL, the single writer on SQLite), a
// retry time and an attempt count, the error recorded on the entity. The
// library decides what is eligible, talks to the LLM, resolves names and
// builds the edges; the backend writes each entity's result in one
// transaction, so an entity's graph is never half-written.
type ExtractionStorage interface {
	// CompleteExtraction writes one entity's extraction in one transaction
	// when the entity is still leased at r.Generation (its content did not
	// change meanwhile): it inserts r.Creates (placeholder entities with
	// their chunks), deletes the edges whose origin is r.EntityID and whose
	// source is in r.Retract, upserts r.Edges (UpsertEdges' precedence, so
	// a manual edge is never overwritten), marks the extraction completed
	// (attempts reset, error, lease and per-entity override cleared) and
	// appends r.Audit. It returns how many edges it wrote (an edge blocked
	// by precedence is not counted), or ok=false, writing nothing but
	// releasing the lease, when the content changed since the claim.
	CompleteExtraction(ctx context.Context, ws string, r ExtractResult) (written int, ok bool, err error)
	// QueueExtraction marks the listed entities pending again (attempts
	// and error cleared, queued now) with the given per-entity provider
	// and model override ("" for the configured default); with
	// cleanSources, their edges of those sources and origin are deleted in
	// the same transaction. It returns how many entities it queued and how
	// many edges it deleted.
	QueueExtraction(ctx context.Context, ws string, ids []uuid.UUID, override ExtractOverride, cleanSources []string) (queued, deleted int, err error)
	// FindByNames returns the non-archived entities one of whose names
	// matches a key in keys (lower-cased, inner whitespace collapsed): the
	// whole content when it is at most MaxEntityNameLen characters, or
	// metadata.name, metadata.title, or an element of metadata.aliases.
	FindByNames(ctx context.Context, ws string, keys []string) ([]NameMatch, error)
}

// MaxEntityNameLen is the longest content that counts as an entity's name
// for name resolution (a placeholder's content is its name).
const MaxEntityNameLen = 200

// ExtractOverride names the LLM for one entity's extraction; empty fields
// take the configured default.
type ExtractOverride struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
}

// ExtractResult is one entity's extraction, written in one transaction.
type ExtractResult struct {
	EntityID   uuid.UUID
	Generation int64
	Creates    []PlaceholderCreate
	Retract    []string
	Edges      []Edge
	Audit      *AuditEntry
}

// PlaceholderCreate is an auto-created entity with its chunks.
type PlaceholderCreate struct {
	Entity *Entity
	Chunks []ChunkInput
}

// NameMatch is an entity found by name.
type NameMatch struct {
	Key       string // the matched key (lower-cased)
	EntityID  uuid.UUID
	Type      EntityType
	CreatedAt time.Time
	// Exact is true when the match is the entity's content or
	// metadata.name (not a title or an alias).
	Exact bool
}
