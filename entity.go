package postgram

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

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
