package driver

import (
	"slices"
	"time"

	"github.com/google/uuid"
)

// Edge sources: who made an edge. Other values (memory-grooming, ...) are
// allowed; these are the ones the library itself writes.
const (
	EdgeSourceManual   = "manual"            // made by a user or agent with Link
	EdgeSourceLLM      = "llm-extraction"    // extracted from an entity's content by an LLM
	EdgeSourceNeighbor = "semantic-neighbor" // linked by embedding similarity
)

// RelationRelatedTo is the relation semantic neighbours are linked with.
const RelationRelatedTo = "related_to"

// MaxRelationLen bounds a relation name, in characters.
const MaxRelationLen = 100

// Edge is a typed, directed link between two entities.
type Edge struct {
	ID         uuid.UUID      `json:"id"`
	SourceID   uuid.UUID      `json:"source_id"`
	TargetID   uuid.UUID      `json:"target_id"`
	Relation   string         `json:"relation"`
	Confidence float64        `json:"confidence"`
	Source     string         `json:"source"`
	Metadata   map[string]any `json:"metadata"`
	// Provenance of a derived edge: the entity whose content (or
	// embeddings) produced it, and the provider, model and prompt version
	// of the LLM that did. Empty for manual edges.
	OriginID      *uuid.UUID `json:"origin_id,omitempty"`
	Provider      string     `json:"provider,omitempty"`
	Model         string     `json:"model,omitempty"`
	PromptVersion string     `json:"prompt_version,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// EdgeDirection selects edges by which end an entity is.
type EdgeDirection string

// Edge directions, relative to the entity asked about.
const (
	DirectionSource EdgeDirection = "source" // the entity is the edge's source (outgoing)
	DirectionTarget EdgeDirection = "target" // the entity is the edge's target (incoming)
	DirectionBoth   EdgeDirection = "both"
)

// ModelInfo identifies an embedding model.
type ModelInfo struct {
	Provider   string `json:"provider"`   // "openai", "ollama", "test", ...
	Name       string `json:"name"`       // e.g. "text-embedding-3-small"
	Dimensions int    `json:"dimensions"` // vector length
}

// AuditEntry records one mutating or privileged operation.
type AuditEntry struct {
	ID        uuid.UUID      `json:"id"`
	At        time.Time      `json:"at"`
	KeyID     string         `json:"key_id"`
	ClientID  string         `json:"client_id"`
	Operation string         `json:"operation"` // e.g. "entity.store", "key.revoke", "admin.sql"
	EntityID  string         `json:"entity_id,omitempty"`
	Details   map[string]any `json:"details,omitempty"`
}

// AuditFilter selects audit entries; zero fields match everything.
type AuditFilter struct {
	Since     time.Time
	Until     time.Time
	KeyID     string
	Operation string
	Limit     int // default 100, at most 10000
}

// APIKey describes a key. The secret itself is never stored: only its
// (peppered) SHA-256 digest.
type APIKey struct {
	ID                  uuid.UUID    `json:"id"`
	Name                string       `json:"name"`
	Prefix              string       `json:"prefix"` // the first characters of the key, to recognise it
	Scopes              []Scope      `json:"scopes"`
	AllowedTypes        []EntityType `json:"allowed_types"`
	AllowedVisibilities []Visibility `json:"allowed_visibilities"`
	ClientID            string       `json:"client_id"`
	CreatedAt           time.Time    `json:"created_at"`
	RevokedAt           *time.Time   `json:"revoked_at,omitempty"`
	LastUsedAt          *time.Time   `json:"last_used_at,omitempty"`
	// ExpiresAt, when set, is the moment the key stops working (a
	// rotated key's end of overlap, or the expiry given at creation).
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// Scope is a permission carried by an API key.
type Scope string

// Scopes.
const (
	ScopeRead   Scope = "read"
	ScopeWrite  Scope = "write"
	ScopeDelete Scope = "delete"
	ScopeSync   Scope = "sync"
	// ScopeBackup lets a key download a backup of the whole store
	// (CheckBackup): every entity, key hash and audit entry in it.
	ScopeBackup Scope = "backup"
)

// AllScopes lists every scope.
var AllScopes = []Scope{ScopeRead, ScopeWrite, ScopeDelete, ScopeSync, ScopeBackup}

// Valid reports whether s is a known scope.
func (s Scope) Valid() bool { return slices.Contains(AllScopes, s) }
