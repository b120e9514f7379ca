package postgram

import (
	"encoding/json"
	"strings"

	"github.com/google/uuid"
	"github.com/postgram-go/postgram/internal/validate"
)

// StoreInput is what Store accepts. Zero values take defaults: visibility
// shared, status active (inbox for tasks).
type StoreInput struct {
	// ID, when set, is the new entity's id: an idempotency key (a second
	// Store with the same id fails with ErrConflict and writes nothing).
	// Default: a new time-ordered id.
	ID         uuid.UUID      `json:"id,omitzero"`
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
		return uuid.Nil, validate.Invalid(field, "%q is not a UUID", validate.Truncate(s, 64))
	}
	return id, nil
}

func validateType(field string, t EntityType) error {
	if !t.Valid() {
		return validate.Invalid(field, "%q is not one of memory, person, project, task, interaction, document", validate.Truncate(string(t), 40))
	}
	return nil
}

func validateVisibility(field string, v Visibility) error {
	if !v.Valid() {
		return validate.Invalid(field, "%q is not one of personal, work, shared", validate.Truncate(string(v), 40))
	}
	return nil
}

func validateStatus(field string, s Status) error {
	if !s.Valid() {
		return validate.Invalid(field, "%q is not one of active, done, archived, inbox, next, waiting, scheduled, someday", validate.Truncate(string(s), 40))
	}
	return nil
}

func validateMetadata(field string, m map[string]any) error {
	if m == nil {
		return nil
	}
	// Before encoding: the backends' JSON types disagree about depth
	// (SQLite refuses beyond 1,000 levels, PostgreSQL stores thousands),
	// so the library draws the line for both.
	if tooDeep(m, 1) {
		return validate.Invalid(field, "nests objects and arrays more than %d levels deep; flatten it", MaxMetadataDepth)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return validate.Invalid(field, "is not representable as JSON: %v", err)
	}
	if len(b) > MaxMetadataBytes {
		return validate.Invalid(field, "is %d bytes of JSON; the maximum is %d", len(b), MaxMetadataBytes)
	}
	if strings.Contains(string(b), `\u0000`) {
		return validate.Invalid(field, "must not contain NUL characters")
	}
	if r, ok := m["memory_role"]; ok && r != nil {
		s, ok := r.(string)
		if !ok || !MemoryRole(s).Valid() {
			return validate.Invalid(field+".memory_role", "must be durable_memory or session_context")
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
