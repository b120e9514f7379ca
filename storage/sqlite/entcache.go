package sqlite

import (
	"container/list"
	"sync"

	"github.com/google/uuid"
	"github.com/postgram-go/postgram/driver"
)

// entCache keeps recently read entities in memory, so that the entities a
// search returns (the same few hundred for the queries agents repeat) are
// not read and decoded from the file on every search: under the REST load
// benchmark that read was a tenth of the server's CPU.
//
// It is kept current like the index, through change_log: every change of an
// entity row logs its rid (kind 1 for the columns the index holds, kind 4
// for the others, migration 013), and catching up drops those rids. Reads
// go through the index's freshness check first, so a hit is never older
// than the last commit before the read began. A fill races with
// invalidation: the generation read before the SQL read must still be
// current when the entity is put, else the fill is dropped (the row read
// may predate a change already applied).
type entCache struct {
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

func newEntCache(maxBytes int64) *entCache {
	return &entCache{max: maxBytes, byKey: map[entKey]*list.Element{}, byRID: map[int64]*list.Element{}}
}

// generation returns the invalidation generation, to pass to put.
func (c *entCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// get returns a copy of the cached entity, or nil.
func (c *entCache) get(ws string, id uuid.UUID) *driver.Entity {
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
	return cloneEntity(e)
}

// put caches e (which the caller must not modify afterwards) read with
// generation gen; metaLen is the length of its metadata as stored.
func (c *entCache) put(gen uint64, ws string, rid int64, e *driver.Entity, metaLen int) {
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
	if el, ok := c.byRID[rid]; ok { // a rid reused by another entity
		c.remove(el)
	}
	el := c.lru.PushFront(&entItem{key: k, rid: rid, e: e, size: size})
	c.byKey[k], c.byRID[rid] = el, el
	c.size += size
	for c.size > c.max {
		c.remove(c.lru.Back())
	}
}

// invalidate drops the entities with the rids of these sets.
func (c *entCache) invalidate(sets ...map[int64]bool) {
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

// clear drops everything (the index was loaded again: changes may have
// been missed).
func (c *entCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.byKey)
	clear(c.byRID)
	c.lru.Init()
	c.size = 0
}

func (c *entCache) remove(el *list.Element) {
	it := el.Value.(*entItem)
	c.lru.Remove(el)
	delete(c.byKey, it.key)
	delete(c.byRID, it.rid)
	c.size -= it.size
}

// cloneEntity deep-copies an entity read from the store. Its metadata came
// from encoding/json, so it holds only maps, slices and immutable scalars,
// and a structural copy replaces driver.Entity.Clone's JSON round trip.
func cloneEntity(e *driver.Entity) *driver.Entity {
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
