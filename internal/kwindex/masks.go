package kwindex

import (
	"encoding/json"
	"sync/atomic"

	"github.com/postgram-go/postgram/driver"
)

// Masks caches, for one workspace, which entity slots the last few
// filters admit: a search admits every entity of the workspace through its
// filter, and evaluating it on 50,000 entities costs more than the vector
// scan's first pass, while searches mostly repeat a few filters (the
// default one, a client's). Searches only read a published list; an
// entity change updates it in place (Changed), under the workspace's
// write lock. The zero value is an empty cache.
type Masks struct {
	gen  uint64 // bumped by every change of the entities
	list atomic.Pointer[maskList]
}

// EntityView returns slot i's filter attributes, or nil for a free slot.
type EntityView func(i int) *driver.FilterView

type maskList struct {
	gen   uint64
	items []admitMask
}

type admitMask struct {
	key   string         // the filter, as JSON
	match driver.Matcher // the filter's conditions, to re-evaluate a changed entity
	mask  []bool         // by entity slot
}

// maskCacheSize is how many filters' masks are kept.
const maskCacheSize = 4

// Admitted returns which of the n entity slots f admits. The caller holds
// the workspace's lock for reading at least, so the entities and the
// generation are stable; the mask returned is shared: read it only.
func (c *Masks) Admitted(f *driver.EntityFilter, n int, ent EntityView) []bool {
	mask, _, _ := c.AdmittedKey(f, n, ent)
	return mask
}

// AdmittedKey is Admitted, with the filter's key: two filters with the
// same key admit the same entities (it is the filter as JSON). ok is false
// when the filter has no key.
func (c *Masks) AdmittedKey(f *driver.EntityFilter, n int, ent EntityView) (mask []bool, key string, ok bool) {
	kb, err := json.Marshal(f)
	key = string(kb)
	cur := c.list.Load()
	if err == nil && cur != nil && cur.gen == c.gen {
		for _, m := range cur.items {
			if m.key == key {
				return m.mask, key, true
			}
		}
	}
	match := f.Matcher() // its own copies of the filter's lists: the caller's may be reused
	mask = make([]bool, n)
	for i := range mask {
		mask[i] = admits(match, ent(i))
	}
	if err != nil {
		return mask, "", false
	}
	next := &maskList{gen: c.gen, items: []admitMask{{key, match, mask}}}
	if cur != nil && cur.gen == c.gen {
		for _, m := range cur.items {
			if len(next.items) == maskCacheSize {
				break
			}
			next.items = append(next.items, m)
		}
	}
	c.list.Store(next) // a concurrent search's list may be lost: only a cache
	return mask, key, true
}

// Changed records that the entity in slot changed (or appeared, or
// left): the cached masks are brought up to date for that slot alone,
// since re-evaluating a filter on every entity after each write made the
// next search pay for all of them. The caller holds the workspace's lock
// for writing, so no search is reading the masks.
func (c *Masks) Changed(slot int32, ent EntityView) {
	cur := c.list.Load()
	valid := cur != nil && cur.gen == c.gen
	c.gen++
	if !valid {
		return
	}
	for i := range cur.items {
		m := &cur.items[i]
		for int(slot) >= len(m.mask) {
			m.mask = append(m.mask, false)
		}
		m.mask[slot] = admits(m.match, ent(int(slot)))
	}
	cur.gen = c.gen
}

func admits(m driver.Matcher, v *driver.FilterView) bool {
	return v != nil && m.Admits(v)
}
