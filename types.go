package postgram

// The value types below are defined in package driver, which backends
// implement; the aliases make them part of this package's API.

import (
	"github.com/postgram-go/postgram/driver"
)

// EntityType is the kind of an entity.
type EntityType = driver.EntityType

// Visibility controls who may see an entity.
type Visibility = driver.Visibility

// Status is an entity's lifecycle (and, for tasks, GTD) status.
type Status = driver.Status

// StageStatus is the state of an asynchronous stage (embedding, extraction).
type StageStatus = driver.StageStatus

// MemoryRole separates durable memory from session working context. It is
// kept in metadata.memory_role.
type MemoryRole = driver.MemoryRole

// Entity is a typed piece of knowledge.
type Entity = driver.Entity

// Edge is a typed, directed link between two entities.
type Edge = driver.Edge

// EdgeDirection selects edges by which end an entity is.
type EdgeDirection = driver.EdgeDirection

// ModelInfo identifies an embedding model.
type ModelInfo = driver.ModelInfo

// AuditEntry records one mutating or privileged operation.
type AuditEntry = driver.AuditEntry

// AuditFilter selects audit entries; zero fields match everything.
type AuditFilter = driver.AuditFilter

// APIKey describes a key. The secret itself is never stored: only its
// (peppered) SHA-256 digest.
type APIKey = driver.APIKey

// Scope is a permission carried by an API key.
type Scope = driver.Scope

// FieldError is an invalid-argument error that names the offending field.
type FieldError = driver.FieldError

// ConflictError reports a stale version; Current is the entity as stored now.
type ConflictError = driver.ConflictError

// ModelMismatchError reports that the store's active embedding model is not
// the configured embedder's; backends return it from EnsureModel, and its
// message tells the operator what to do.
type ModelMismatchError = driver.ModelMismatchError

// BackendError is a store's failure classified as one of the sentinels
// (Kind: ErrUnavailable, ErrInvalidArgument, ...). Public says what happened
// in words a client may read; Err is the driver's own error, whose text
// can carry SQL, values, host names or file paths: it is for logs only.
// Transports (transport/apierror) show Public, never Err.
type BackendError = driver.BackendError

// Entity types.
const (
	TypeMemory      EntityType = driver.TypeMemory
	TypePerson      EntityType = driver.TypePerson
	TypeProject     EntityType = driver.TypeProject
	TypeTask        EntityType = driver.TypeTask
	TypeInteraction EntityType = driver.TypeInteraction
	TypeDocument    EntityType = driver.TypeDocument
)

// Visibilities.
const (
	VisibilityPersonal Visibility = driver.VisibilityPersonal
	VisibilityWork     Visibility = driver.VisibilityWork
	VisibilityShared   Visibility = driver.VisibilityShared
)

// Statuses.
const (
	StatusActive    Status = driver.StatusActive
	StatusDone      Status = driver.StatusDone
	StatusArchived  Status = driver.StatusArchived
	StatusInbox     Status = driver.StatusInbox
	StatusNext      Status = driver.StatusNext
	StatusWaiting   Status = driver.StatusWaiting
	StatusScheduled Status = driver.StatusScheduled
	StatusSomeday   Status = driver.StatusSomeday
)

// Stage states.
const (
	StagePending   StageStatus = driver.StagePending
	StageCompleted StageStatus = driver.StageCompleted
	StageFailed    StageStatus = driver.StageFailed
	StageSkipped   StageStatus = driver.StageSkipped
)

// Memory roles.
const (
	RoleDurableMemory  MemoryRole = driver.RoleDurableMemory
	RoleSessionContext MemoryRole = driver.RoleSessionContext
)

// Limits on input sizes. They keep one request from exhausting memory or
// producing thousands of chunks.
const (
	MaxContentBytes  = driver.MaxContentBytes // 1 MiB of UTF-8 per entity
	MaxTags          = driver.MaxTags
	MaxTagLen        = driver.MaxTagLen
	MaxOwnerLen      = driver.MaxOwnerLen
	MaxSourceLen     = driver.MaxSourceLen
	MaxMetadataBytes = driver.MaxMetadataBytes
	// MaxMetadataDepth bounds how deeply metadata nests objects and
	// arrays, the metadata object itself being level 1.
	MaxMetadataDepth = driver.MaxMetadataDepth
	MaxListLimit     = driver.MaxListLimit
	DefaultListLimit = driver.DefaultListLimit
	MaxBulkIDs       = driver.MaxBulkIDs
	// MaxRelationLen bounds a relation name, in characters.
	MaxRelationLen = driver.MaxRelationLen
	// MaxContextLen bounds a task's GTD context.
	MaxContextLen = 100
	// MaxQueryBytes bounds a search query.
	MaxQueryBytes = 32 << 10
	// KeywordPoolSize is the most chunks the keyword branch ranks.
	KeywordPoolSize = 200
	// MaxPushFiles bounds a single-shot sync push; larger folders use the
	// three-phase protocol.
	MaxPushFiles = 1000
	// Graph expansion: the depth and node count Expand allows and takes
	// by default.
	MaxExpandDepth     = 3
	DefaultExpandDepth = 1
	MaxExpandNodes     = 1000
	DefaultExpandNodes = 100
)

// Names the library writes: edge sources (who made an edge; other values
// are allowed), the relations it links with and the tag of auto-created
// placeholder entities.
const (
	EdgeSourceManual   = driver.EdgeSourceManual   // made by a user or agent with Link
	EdgeSourceLLM      = driver.EdgeSourceLLM      // extracted from an entity's content by an LLM
	EdgeSourceNeighbor = driver.EdgeSourceNeighbor // linked by embedding similarity
	EdgeSourceGrooming = "memory-grooming"         // written by memory grooming
	// RelationRelatedTo is the relation semantic neighbours are linked with.
	RelationRelatedTo = driver.RelationRelatedTo
	// RelationPromotedTo links a groomed session context to the durable
	// memory it was promoted into.
	RelationPromotedTo = "promoted_to"
	// TagAutoCreated tags placeholder entities that extraction created.
	TagAutoCreated = "auto-created"
)

// Edge directions, relative to the entity asked about.
const (
	DirectionSource EdgeDirection = driver.DirectionSource // the entity is the edge's source (outgoing)
	DirectionTarget EdgeDirection = driver.DirectionTarget // the entity is the edge's target (incoming)
	DirectionBoth   EdgeDirection = driver.DirectionBoth
)

// Scopes.
const (
	ScopeRead   Scope = driver.ScopeRead
	ScopeWrite  Scope = driver.ScopeWrite
	ScopeDelete Scope = driver.ScopeDelete
	ScopeSync   Scope = driver.ScopeSync
	// ScopeBackup lets a key download a backup of the whole store
	// (CheckBackup): every entity, key hash and audit entry in it.
	ScopeBackup Scope = driver.ScopeBackup
)

// Every valid value, in a stable order.
var (
	EntityTypes  = driver.EntityTypes
	Visibilities = driver.Visibilities
	Statuses     = driver.Statuses
	AllScopes    = driver.AllScopes
)

// Sentinel errors. Every error the library returns wraps exactly one of them,
// so callers (and the REST, MCP and CLI adapters) classify failures with
// errors.Is and map them to a status in one place.
var (
	// ErrNotFound: the entity, edge or key does not exist in this workspace,
	// or the caller may not see it.
	ErrNotFound = driver.ErrNotFound
	// ErrConflict: an optimistic-concurrency check failed. The error is a
	// *ConflictError carrying the current state.
	ErrConflict = driver.ErrConflict
	// ErrInvalidArgument: a value failed validation. The error is a
	// *FieldError naming the field.
	ErrInvalidArgument = driver.ErrInvalidArgument
	// ErrForbidden: the caller is authenticated but lacks a scope, entity
	// type or visibility the operation needs.
	ErrForbidden = driver.ErrForbidden
	// ErrUnauthorized: the caller is not authenticated (missing, unknown or
	// revoked key).
	ErrUnauthorized = driver.ErrUnauthorized
	// ErrUnavailable: a dependency (the store, the embedding provider) cannot
	// serve the request right now.
	ErrUnavailable = driver.ErrUnavailable
	// ErrEmbeddingFailed: the embedding provider answered with an error.
	ErrEmbeddingFailed = driver.ErrEmbeddingFailed
	// ErrLLMFailed: the LLM provider (extraction, edge validation,
	// grooming) refused, or answered with something that is not the
	// requested JSON (malformed, truncated, off-schema, a refusal).
	ErrLLMFailed = driver.ErrLLMFailed
	// ErrRateLimited: too many requests.
	ErrRateLimited = driver.ErrRateLimited
	// ErrModelMismatch: the store's active embedding model differs from the
	// configured embedder; an explicit migration is needed.
	ErrModelMismatch = driver.ErrModelMismatch
)

// FieldOf returns the field named by a *FieldError in err's chain, or "".
func FieldOf(err error) string { return driver.FieldOf(err) }

// Results and inputs of Client and Admin calls whose types the backend
// seam defines.
type (
	// QueueStatus reports the enrichment and extraction queues.
	QueueStatus = driver.QueueStatus
	// ModelRecord is a registered embedding model.
	ModelRecord = driver.ModelRecord
	// StoreStats sizes the store.
	StoreStats = driver.StoreStats
	// EdgeSummary counts a search result's edges by relation.
	EdgeSummary = driver.EdgeSummary
	// ExtractOverride names another provider or model for one re-extraction.
	ExtractOverride = driver.ExtractOverride
	// Strategy selects how the vector branch searches.
	Strategy = driver.Strategy
)

// Vector search strategies.
const (
	StrategyAuto  Strategy = driver.StrategyAuto
	StrategyExact Strategy = driver.StrategyExact
	StrategyHNSW  Strategy = driver.StrategyHNSW
)
