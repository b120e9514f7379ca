package driver

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// EntityType is the kind of an entity.
type EntityType string

// Entity types.
const (
	TypeMemory      EntityType = "memory"
	TypePerson      EntityType = "person"
	TypeProject     EntityType = "project"
	TypeTask        EntityType = "task"
	TypeInteraction EntityType = "interaction"
	TypeDocument    EntityType = "document"
)

// EntityTypes lists every entity type in a stable order.
var EntityTypes = []EntityType{TypeMemory, TypePerson, TypeProject, TypeTask, TypeInteraction, TypeDocument}

// Valid reports whether t is a known type.
func (t EntityType) Valid() bool {
	for _, k := range EntityTypes {
		if t == k {
			return true
		}
	}
	return false
}

// Visibility controls who may see an entity.
type Visibility string

// Visibilities.
const (
	VisibilityPersonal Visibility = "personal"
	VisibilityWork     Visibility = "work"
	VisibilityShared   Visibility = "shared"
)

// Visibilities lists every visibility.
var Visibilities = []Visibility{VisibilityPersonal, VisibilityWork, VisibilityShared}

// Valid reports whether v is a known visibility.
func (v Visibility) Valid() bool {
	return v == VisibilityPersonal || v == VisibilityWork || v == VisibilityShared
}

// Status is an entity's lifecycle (and, for tasks, GTD) status.
type Status string

// Statuses.
const (
	StatusActive    Status = "active"
	StatusDone      Status = "done"
	StatusArchived  Status = "archived"
	StatusInbox     Status = "inbox"
	StatusNext      Status = "next"
	StatusWaiting   Status = "waiting"
	StatusScheduled Status = "scheduled"
	StatusSomeday   Status = "someday"
)

// Statuses lists every status.
var Statuses = []Status{StatusActive, StatusDone, StatusArchived, StatusInbox, StatusNext, StatusWaiting, StatusScheduled, StatusSomeday}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	for _, k := range Statuses {
		if s == k {
			return true
		}
	}
	return false
}

// StageStatus is the state of an asynchronous stage (embedding, extraction).
type StageStatus string

// Stage states.
const (
	StagePending   StageStatus = "pending"
	StageCompleted StageStatus = "completed"
	StageFailed    StageStatus = "failed"
	StageSkipped   StageStatus = "skipped"
)

// MemoryRole separates durable memory from session working context. It is
// kept in metadata.memory_role.
type MemoryRole string

// Memory roles.
const (
	RoleDurableMemory  MemoryRole = "durable_memory"
	RoleSessionContext MemoryRole = "session_context"
)

// Valid reports whether r is a known role.
func (r MemoryRole) Valid() bool { return r == RoleDurableMemory || r == RoleSessionContext }

// Limits on input sizes. They keep one request from exhausting memory or
// producing thousands of chunks.
const (
	MaxContentBytes  = 1 << 20 // 1 MiB of UTF-8 per entity
	MaxTags          = 64
	MaxTagLen        = 100
	MaxOwnerLen      = 200
	MaxSourceLen     = 2000
	MaxMetadataBytes = 64 << 10
	// MaxMetadataDepth bounds how deeply metadata nests objects and
	// arrays, the metadata object itself being level 1.
	MaxMetadataDepth = 64
	MaxListLimit     = 500
	DefaultListLimit = 50
	MaxBulkIDs       = 500
)

// Entity is a typed piece of knowledge.
type Entity struct {
	ID         uuid.UUID      `json:"id"`
	Type       EntityType     `json:"type"`
	Content    string         `json:"content"`
	Visibility Visibility     `json:"visibility"`
	Owner      string         `json:"owner"`
	Status     Status         `json:"status"`
	Tags       []string       `json:"tags"`
	Source     string         `json:"source"`
	Metadata   map[string]any `json:"metadata"`
	Version    int64          `json:"version"`
	// ClientID is the API client that wrote the entity; session context is
	// visible only to the same client.
	ClientID string `json:"client_id,omitempty"`

	EnrichmentStatus   StageStatus `json:"enrichment_status"`
	EnrichmentAttempts int         `json:"enrichment_attempts"`
	EnrichmentError    string      `json:"enrichment_error,omitempty"`
	ExtractionStatus   StageStatus `json:"extraction_status"`
	ExtractionAttempts int         `json:"extraction_attempts"`
	ExtractionError    string      `json:"extraction_error,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// MemoryRole returns metadata.memory_role, or "" when unset.
func (e *Entity) MemoryRole() MemoryRole {
	if e == nil || e.Metadata == nil {
		return ""
	}
	s, _ := e.Metadata["memory_role"].(string)
	return MemoryRole(s)
}

// Clone returns a deep copy of e (tags and metadata included; tags are
// never nil).
func (e *Entity) Clone() *Entity {
	if e == nil {
		return nil
	}
	c := *e
	// Never nil: an untagged entity's tags are [] on the wire, as stored.
	c.Tags = append(make([]string, 0, len(e.Tags)), e.Tags...)
	c.Metadata = CloneMetadata(e.Metadata)
	return &c
}

// CloneMetadata returns a deep copy of m (nil stays nil).
func CloneMetadata(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}
