// Package entcache keeps recently read entities in memory for a store
// whose reads of them repeat (the results of the searches agents repeat),
// so that they are not read and decoded from the database every time.
//
// The store keeps it current: each change it learns of (SQLite's
// change_log, PostgreSQL's search_changes) drops the entities it names, and
// it reads from the cache only once it has caught up with the changes
// committed before the read began. A fill races with invalidation: the
// generation read before the database read must still be current when the
// entity is put, else the fill is dropped (the row read may predate a
// change already applied).
package entcache

import (
	"container/list"
	"sync"

	"github.com/google/uuid"
	"github.com/postgram-go/postgram/driver"
)

// Cache is an LRU of entities bounded in bytes. The zero value is not
// usable: call New.
type Cache struct {
	mu    sync.Mutex
	max   int64 // bytes; 0 disables the cache
	size  int64
	gen   uint64 // bumped by every invalidation
	byKey map[entKey]*list.Element
	byRID map[int64]*list.Element
	lru   list.List // front = most recently used; values are *entItem
}

type entKey struct {
	ws string
	id uuid.UUID
}

type entItem struct {
	key  entKey
	rid  int64
	e    *driver.Entity // never handed out: callers get clones
	size int64
}

// entOverhead approximates the bookkeeping of one cached entity in bytes
// (the struct, two map entries, the list element).
const entOverhead = 512

// New returns a cache of at most maxBytes (approximately); 0 or less
// disables it.
func New(maxBytes int64) *Cache {
	return &Cache{max: max(maxBytes, 0), byKey: map[entKey]*list.Element{}, byRID: map[int64]*list.Element{}}
}

// Enabled reports whether the cache keeps anything.
func (c *Cache) Enabled() bool { return c.max > 0 }

// Generation returns the invalidation generation, to pass to Put.
func (c *Cache) Generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// Get returns a copy of the cached entity, or nil.
func (c *Cache) Get(ws string, id uuid.UUID) *driver.Entity {
	if c.max == 0 {
		return nil
	}
	c.mu.Lock()
	el, ok := c.byKey[entKey{ws, id}]
	if !ok {
		c.mu.Unlock()
		return nil
	}
	c.lru.MoveToFront(el)
	e := el.Value.(*entItem).e
	c.mu.Unlock()
	return Clone(e)
}

// Lookup answers ids from the cache: copies of the entities it holds
// (each id once, however often asked), the ids it does not hold (to read
// from the database, each once), and the generation to Put what is read
// with.
func (c *Cache) Lookup(ws string, ids []uuid.UUID) (hits []*driver.Entity, missing []uuid.UUID, gen uint64) {
	gen = c.Generation()
	hits = make([]*driver.Entity, 0, len(ids))
	seen := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if e := c.Get(ws, id); e != nil {
			hits = append(hits, e)
		} else {
			missing = append(missing, id)
		}
	}
	return hits, missing, gen
}

// Put caches e (which the caller must not modify afterwards) read with
// generation gen; metaLen is the length of its metadata as stored. rid,
// when not 0, is the row id InvalidateRIDs names it by.
func (c *Cache) Put(gen uint64, ws string, rid int64, e *driver.Entity, metaLen int) {
	if c.max == 0 {
		return
	}
	size := int64(entOverhead + len(e.Content) + len(e.Source) + len(e.Owner) + len(e.ClientID) +
		len(e.EnrichmentError) + len(e.ExtractionError) + 2*metaLen)
	for _, t := range e.Tags {
		size += int64(len(t)) + 16
	}
	if size > c.max/8 {
		return // one entity may not evict most of the others
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	k := entKey{ws, e.ID}
	if el, ok := c.byKey[k]; ok {
		c.remove(el)
	}
	if el, ok := c.byRID[rid]; ok && rid != 0 { // a rid reused by another entity
		c.remove(el)
	}
	el := c.lru.PushFront(&entItem{key: k, rid: rid, e: e, size: size})
	c.byKey[k] = el
	if rid != 0 {
		c.byRID[rid] = el
	}
	c.size += size
	for c.size > c.max {
		c.remove(c.lru.Back())
	}
}

// InvalidateRIDs drops the entities with the rids of these sets.
func (c *Cache) InvalidateRIDs(sets ...map[int64]bool) {
	n := 0
	for _, rids := range sets {
		n += len(rids)
	}
	if c.max == 0 || n == 0 {
		return // no entity changed: fills in flight stay valid
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, rids := range sets {
		for rid := range rids {
			if el, ok := c.byRID[rid]; ok {
				c.remove(el)
			}
		}
	}
}

// Invalidate drops workspace ws's entities with these ids.
func (c *Cache) Invalidate(ws string, ids map[uuid.UUID]bool) {
	if c.max == 0 || len(ids) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for id := range ids {
		if el, ok := c.byKey[entKey{ws, id}]; ok {
			c.remove(el)
		}
	}
}

// Clear drops everything (the store's index was loaded again: changes may
// have been missed).
func (c *Cache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.byKey)
	clear(c.byRID)
	c.lru.Init()
	c.size = 0
}

// ClearWorkspace drops workspace ws's entities.
func (c *Cache) ClearWorkspace(ws string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for k, el := range c.byKey {
		if k.ws == ws {
			c.remove(el)
		}
	}
}

// Len returns the number of entities cached.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}

func (c *Cache) remove(el *list.Element) {
	it := el.Value.(*entItem)
	c.lru.Remove(el)
	delete(c.byKey, it.key)
	if it.rid != 0 {
		delete(c.byRID, it.rid)
	}
	c.size -= it.size
}

// Clone deep-copies an entity read from the store. Its metadata came
// from encoding/json, so it holds only maps, slices and immutable scalars,
// and a structural copy replaces driver.Entity.Clone's JSON round trip.
func Clone(e *driver.Entity) *driver.Entity {
	c := *e
	c.Tags = append(make([]string, 0, len(e.Tags)), e.Tags...)
	if e.Metadata != nil {
		c.Metadata = cloneJSONObject(e.Metadata)
	}
	return &c
}

func cloneJSONObject(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneJSONValue(v)
	}
	return out
}

func cloneJSONValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneJSONObject(v)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = cloneJSONValue(x)
		}
		return out
	default: // string, float64, bool, nil, json.Number
		return v
	}
}
