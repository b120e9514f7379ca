package driver

import (
	"fmt"
	"slices"
	"time"
)

// The rules of an EntityFilter are written once, here: Conds lists them as
// conditions that a backend renders into its SQL (storage/sqlite and
// storage/postgres each switch over Field and Op), and Matcher evaluates
// the same conditions in Go (the SQLite in-memory index, the library's
// access checks). A rule added to Conds reaches every consumer; a Field or
// Op a backend does not render makes its filter builder panic in the
// conformance suite rather than silently admit too much.

// FilterField names the entity attribute a condition reads.
type FilterField int

// Filterable attributes, with the column both backends store them in.
const (
	FieldType       FilterField = iota + 1 // e.type
	FieldStatus                            // e.status
	FieldVisibility                        // e.visibility
	FieldOwner                             // e.owner
	FieldTags                              // e.tags
	FieldMemoryRole                        // e.memory_role (metadata.memory_role)
	FieldUpdatedAt                         // e.updated_at
)

// Column is the entities-table column holding the field, in both
// backends' schemas.
func (f FilterField) Column() string {
	switch f {
	case FieldType:
		return "type"
	case FieldStatus:
		return "status"
	case FieldVisibility:
		return "visibility"
	case FieldOwner:
		return "owner"
	case FieldTags:
		return "tags"
	case FieldMemoryRole:
		return "memory_role"
	case FieldUpdatedAt:
		return "updated_at"
	}
	panic(fmt.Sprintf("driver: filter field %d has no column", f))
}

// CondOp is how a condition compares.
type CondOp int

// Comparisons.
const (
	// OpIn: the field is one of Values.
	OpIn CondOp = iota + 1
	// OpNotEq: the field differs from Value.
	OpNotEq
	// OpEq: the field equals Value.
	OpEq
	// OpHasAll: the field (a list: tags) holds every one of Values.
	OpHasAll
	// OpOwnSession: the entity is not session context (FieldMemoryRole is
	// not RoleSessionContext), or its client id equals Value. Session
	// context is visible only to the client that wrote it.
	OpOwnSession
	// OpBefore and OpAfter: the field (a time) is strictly before or after
	// Time.
	OpBefore
	OpAfter
)

// Cond is one rule of an EntityFilter; an entity must pass all of them.
type Cond struct {
	Field  FilterField
	Op     CondOp
	Value  string
	Values []string
	Time   time.Time
}

// Conds returns f's rules. Archived entities are excluded unless
// IncludeArchived is set or Statuses names archived explicitly.
func (f *EntityFilter) Conds() []Cond {
	out := make([]Cond, 0, 8)
	if len(f.Types) > 0 {
		out = append(out, Cond{Field: FieldType, Op: OpIn, Values: asStrings(f.Types)})
	}
	if len(f.Statuses) > 0 {
		out = append(out, Cond{Field: FieldStatus, Op: OpIn, Values: asStrings(f.Statuses)})
	}
	if !f.IncludeArchived && !slices.Contains(f.Statuses, StatusArchived) {
		out = append(out, Cond{Field: FieldStatus, Op: OpNotEq, Value: string(StatusArchived)})
	}
	if len(f.Visibilities) > 0 {
		out = append(out, Cond{Field: FieldVisibility, Op: OpIn, Values: asStrings(f.Visibilities)})
	}
	if f.Owner != "" {
		// The reference system's meaning: an owner filter also admits
		// entities with no owner and those owned by OwnerShared.
		out = append(out, Cond{Field: FieldOwner, Op: OpIn, Values: []string{f.Owner, "", OwnerShared}})
	}
	if len(f.Tags) > 0 {
		out = append(out, Cond{Field: FieldTags, Op: OpHasAll, Values: f.Tags})
	}
	if f.MemoryRole != "" {
		out = append(out, Cond{Field: FieldMemoryRole, Op: OpEq, Value: string(f.MemoryRole)})
	}
	if f.ClientScoped {
		out = append(out, Cond{Field: FieldMemoryRole, Op: OpOwnSession, Value: f.ClientID})
	}
	if !f.UpdatedBefore.IsZero() {
		out = append(out, Cond{Field: FieldUpdatedAt, Op: OpBefore, Time: f.UpdatedBefore})
	}
	if !f.UpdatedAfter.IsZero() {
		out = append(out, Cond{Field: FieldUpdatedAt, Op: OpAfter, Time: f.UpdatedAfter})
	}
	return out
}

func asStrings[T ~string](in []T) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}

// OwnerShared is the owner every owner filter admits besides the one
// asked for (and entities with no owner).
const OwnerShared = "shared"

// FilterView is what a filter reads of an entity, for evaluating it in Go.
type FilterView struct {
	Type       EntityType
	Status     Status
	Visibility Visibility
	Owner      string
	Tags       []string
	MemoryRole string // metadata.memory_role; "" when absent
	ClientID   string
	UpdatedAt  int64 // Unix microseconds
}

// Equal reports whether v and o hold the same attributes, so that every
// filter admits both or neither (TestFilterViewEqual keeps it complete).
func (v *FilterView) Equal(o *FilterView) bool {
	return v.Type == o.Type && v.Status == o.Status && v.Visibility == o.Visibility && v.Owner == o.Owner &&
		v.MemoryRole == o.MemoryRole && v.ClientID == o.ClientID && v.UpdatedAt == o.UpdatedAt && slices.Equal(v.Tags, o.Tags)
}

// ViewOf returns the view of e a filter reads.
func ViewOf(e *Entity) FilterView {
	return FilterView{Type: e.Type, Status: e.Status, Visibility: e.Visibility, Owner: e.Owner,
		Tags: e.Tags, MemoryRole: string(e.MemoryRole()), ClientID: e.ClientID, UpdatedAt: e.UpdatedAt.UnixMicro()}
}

// Matcher evaluates a filter's conditions in Go. Build it once per filter
// (f.Matcher()) and call Admits per entity.
type Matcher []Cond

// Matcher compiles f.
func (f *EntityFilter) Matcher() Matcher { return f.Conds() }

// Admits reports whether f admits v (a one-off check; see Matcher).
func (f *EntityFilter) Admits(v *FilterView) bool { return f.Matcher().Admits(v) }

// Admits reports whether every condition holds for v.
func (m Matcher) Admits(v *FilterView) bool {
	for i := range m {
		if !m[i].holds(v) {
			return false
		}
	}
	return true
}

func (c *Cond) holds(v *FilterView) bool {
	switch c.Op {
	case OpOwnSession:
		return v.MemoryRole != string(RoleSessionContext) || v.ClientID == c.Value
	case OpHasAll:
		for _, t := range c.Values {
			if !slices.Contains(v.Tags, t) {
				return false
			}
		}
		return true
	case OpBefore:
		return v.UpdatedAt < c.Time.UnixMicro()
	case OpAfter:
		return v.UpdatedAt > c.Time.UnixMicro()
	}
	var s string
	switch c.Field {
	case FieldType:
		s = string(v.Type)
	case FieldStatus:
		s = string(v.Status)
	case FieldVisibility:
		s = string(v.Visibility)
	case FieldOwner:
		s = v.Owner
	case FieldMemoryRole:
		s = v.MemoryRole
	default:
		return false
	}
	switch c.Op {
	case OpIn:
		return slices.Contains(c.Values, s)
	case OpEq:
		return s == c.Value
	case OpNotEq:
		return s != c.Value
	}
	return false
}
