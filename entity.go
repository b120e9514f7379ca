package postgram

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

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
	c.Metadata = cloneMetadata(e.Metadata)
	return &c
}

func cloneMetadata(m map[string]any) map[string]any {
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

// StoreInput is what Store accepts. Zero values take defaults: visibility
// shared, status active (inbox for tasks).
type StoreInput struct {
	Type       EntityType     `json:"type"`
	Content    string         `json:"content"`
	Visibility Visibility     `json:"visibility,omitempty"`
	Owner      string         `json:"owner,omitempty"`
	Status     Status         `json:"status,omitempty"`
	Tags       []string       `json:"tags,omitempty"`
	Source     string         `json:"source,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	// SkipExtraction marks LLM extraction skipped for this entity.
	SkipExtraction bool `json:"skip_extraction,omitempty"`
}

// UpdateInput is a partial update. Nil fields are left unchanged; Metadata
// is shallow-merged (a key set to nil is removed). Version must be the
// version the caller read.
type UpdateInput struct {
	Version    int64          `json:"version"`
	Content    *string        `json:"content,omitempty"`
	Visibility *Visibility    `json:"visibility,omitempty"`
	Owner      *string        `json:"owner,omitempty"`
	Status     *Status        `json:"status,omitempty"`
	Tags       *[]string      `json:"tags,omitempty"`
	Source     *string        `json:"source,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// ParseID parses an entity id, naming field in the error.
func ParseID(field, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(strings.TrimSpace(s))
	if err != nil || len(strings.TrimSpace(s)) != 36 {
		return uuid.Nil, invalid(field, "%q is not a UUID", truncate(s, 64))
	}
	return id, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func validateContent(field, s string, required bool) error {
	if !utf8.ValidString(s) {
		return invalid(field, "must be valid UTF-8")
	}
	if len(s) > MaxContentBytes {
		return invalid(field, "is %d bytes; the maximum is %d", len(s), MaxContentBytes)
	}
	if strings.ContainsRune(s, 0) {
		return invalid(field, "must not contain NUL bytes")
	}
	if required && strings.TrimSpace(s) == "" {
		return invalid(field, "must not be empty")
	}
	return nil
}

func validateType(field string, t EntityType) error {
	if !t.Valid() {
		return invalid(field, "%q is not one of memory, person, project, task, interaction, document", truncate(string(t), 40))
	}
	return nil
}

func validateVisibility(field string, v Visibility) error {
	if !v.Valid() {
		return invalid(field, "%q is not one of personal, work, shared", truncate(string(v), 40))
	}
	return nil
}

func validateStatus(field string, s Status) error {
	if !s.Valid() {
		return invalid(field, "%q is not one of active, done, archived, inbox, next, waiting, scheduled, someday", truncate(string(s), 40))
	}
	return nil
}

func validateShort(field, s string, max int) error {
	if !utf8.ValidString(s) {
		return invalid(field, "must be valid UTF-8")
	}
	if len(s) > max {
		return invalid(field, "is %d bytes; the maximum is %d", len(s), max)
	}
	if strings.ContainsRune(s, 0) {
		return invalid(field, "must not contain NUL bytes")
	}
	return nil
}

// normalizeTags validates tags and returns them trimmed and de-duplicated,
// in first-seen order.
func normalizeTags(field string, tags []string) ([]string, error) {
	if len(tags) > MaxTags {
		return nil, invalid(field, "has %d tags; the maximum is %d", len(tags), MaxTags)
	}
	out := make([]string, 0, len(tags))
	seen := make(map[string]bool, len(tags))
	for i, t := range tags {
		t = strings.TrimSpace(t)
		f := field + "[" + itoa(i) + "]"
		if t == "" {
			return nil, invalid(f, "must not be empty")
		}
		if err := validateShort(f, t, MaxTagLen); err != nil {
			return nil, err
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, nil
}

func validateMetadata(field string, m map[string]any) error {
	if m == nil {
		return nil
	}
	// Before encoding: the backends' JSON types disagree about depth
	// (SQLite refuses beyond 1,000 levels, PostgreSQL stores thousands),
	// so the library draws the line for both.
	if tooDeep(m, 1) {
		return invalid(field, "nests objects and arrays more than %d levels deep; flatten it", MaxMetadataDepth)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return invalid(field, "is not representable as JSON: %v", err)
	}
	if len(b) > MaxMetadataBytes {
		return invalid(field, "is %d bytes of JSON; the maximum is %d", len(b), MaxMetadataBytes)
	}
	if strings.Contains(string(b), `\u0000`) {
		return invalid(field, "must not contain NUL characters")
	}
	if r, ok := m["memory_role"]; ok && r != nil {
		s, ok := r.(string)
		if !ok || !MemoryRole(s).Valid() {
			return invalid(field+".memory_role", "must be durable_memory or session_context")
		}
	}
	return nil
}

// tooDeep reports whether v, at nesting level depth, holds objects or
// arrays more than MaxMetadataDepth levels deep. It never descends further
// than that.
func tooDeep(v any, depth int) bool {
	switch x := v.(type) {
	case map[string]any:
		if depth > MaxMetadataDepth {
			return true
		}
		for _, e := range x {
			if tooDeep(e, depth+1) {
				return true
			}
		}
	case []any:
		if depth > MaxMetadataDepth {
			return true
		}
		for _, e := range x {
			if tooDeep(e, depth+1) {
				return true
			}
		}
	}
	return false
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	var b [20]byte
	p := len(b)
	for i > 0 {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
	}
	return string(b[p:])
}
