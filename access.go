package postgram

import (
	"fmt"
	"slices"

	"github.com/postgram-go/postgram/driver"
)

// Principal is who is calling: an API key's identity and limits. The
// library enforces it on every call made through a client from Admin.As, so REST, MCP
// and the CLI cannot disagree about access.
type Principal struct {
	KeyID    string
	ClientID string
	Scopes   []Scope
	// AllowedTypes and AllowedVisibilities limit what the caller may see
	// and write; empty means all.
	AllowedTypes        []EntityType
	AllowedVisibilities []Visibility
}

// Has reports whether p carries scope s.
func (p *Principal) Has(s Scope) bool {
	return p == nil || slices.Contains(p.Scopes, s)
}

// need returns ErrForbidden unless p carries scope s.
func (p *Principal) need(s Scope, op string) error {
	if p.Has(s) {
		return nil
	}
	return fmt.Errorf("%s needs the %q scope: %w", op, s, ErrForbidden)
}

// canSee reports whether c's principal may read e: the rules of the
// entity filter its reads go through (Principal.restrict), evaluated by
// the same conditions the backends render in SQL.
func (c *Client) canSee(e *Entity) bool {
	if c.principal == nil {
		return true
	}
	c.seesOnce.Do(func() {
		f, _ := c.principal.restrict(driver.EntityFilter{IncludeArchived: true})
		c.sees = f.Matcher()
	})
	v := driver.ViewOf(e)
	return c.sees.Admits(&v)
}

// Sees reports whether p may read an entity that looks like v (its type,
// visibility, owner, memory role and session-context client): the read
// scope and the same rules every read of the library applies. A nil
// principal (an unscoped client) sees everything. Package feed uses it to
// filter change events.
func (p *Principal) Sees(v driver.FilterView) bool {
	if p == nil {
		return true
	}
	if !p.Has(ScopeRead) {
		return false
	}
	f, ok := p.restrict(driver.EntityFilter{IncludeArchived: true})
	return ok && f.Admits(&v)
}

// CanWrite returns an error wrapping ErrForbidden unless p may write an
// entity of type t with visibility v: the write scope and the key's types
// and visibilities. A nil principal (an unscoped client) may. Package
// ingest checks a submission with it before queuing the job.
func (p *Principal) CanWrite(t EntityType, v Visibility) error {
	if err := p.need(ScopeWrite, "writing"); err != nil {
		return err
	}
	return p.canWrite(t, v)
}

// canWrite returns ErrForbidden unless p may write an entity of type t with
// visibility v.
func (p *Principal) canWrite(t EntityType, v Visibility) error {
	if p == nil {
		return nil
	}
	if len(p.AllowedTypes) > 0 && !slices.Contains(p.AllowedTypes, t) {
		return fmt.Errorf("this key may not write entities of type %q: %w", t, ErrForbidden)
	}
	if len(p.AllowedVisibilities) > 0 && !slices.Contains(p.AllowedVisibilities, v) {
		return fmt.Errorf("this key may not write entities with visibility %q: %w", v, ErrForbidden)
	}
	return nil
}

// clientID is the client id recorded on writes.
func (p *Principal) clientID() string {
	if p == nil {
		return ""
	}
	return p.ClientID
}

// restrict narrows f to what p may see. It reports false when nothing can
// match (the requested types or visibilities are all outside p's limits).
func (p *Principal) restrict(f driver.EntityFilter) (driver.EntityFilter, bool) {
	if p == nil {
		return f, true
	}
	if len(p.AllowedTypes) > 0 {
		if len(f.Types) == 0 {
			f.Types = append([]EntityType(nil), p.AllowedTypes...)
		} else {
			f.Types = intersect(f.Types, p.AllowedTypes)
			if len(f.Types) == 0 {
				return f, false
			}
		}
	}
	if len(p.AllowedVisibilities) > 0 {
		if len(f.Visibilities) == 0 {
			f.Visibilities = append([]Visibility(nil), p.AllowedVisibilities...)
		} else {
			f.Visibilities = intersect(f.Visibilities, p.AllowedVisibilities)
			if len(f.Visibilities) == 0 {
				return f, false
			}
		}
	}
	f.ClientScoped = true
	f.ClientID = p.ClientID
	return f, true
}

func intersect[T comparable](a, b []T) []T {
	var out []T
	for _, v := range a {
		if slices.Contains(b, v) && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// CanBackup reports whether the principal may take a backup of the whole
// store (REST GET /api/admin/backup): an admin, or a key with the backup
// scope and no limit on entity types or visibilities (a backup holds
// everything, so a limited key could read past its limits).
// A nil principal (an unscoped client) may.
func (p *Principal) CanBackup() error {
	if err := p.need(ScopeBackup, "backup"); err != nil {
		return err
	}
	if p != nil && (len(p.AllowedTypes) > 0 || len(p.AllowedVisibilities) > 0) {
		return fmt.Errorf("backup holds every entity: a key limited to some types or visibilities cannot take one: %w", ErrForbidden)
	}
	return nil
}
