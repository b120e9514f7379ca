package postgram

import (
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"sync"
)

// queryCache is the in-process LRU in front of the persisted cache.
type queryCache struct {
	cfg QueryCacheConfig

	mu    sync.Mutex
	ll    *list.List
	items map[string]*list.Element
}

type cacheEntry struct {
	key string
	vec []float32
}

func newQueryCache(cfg QueryCacheConfig) *queryCache {
	return &queryCache{cfg: cfg, ll: list.New(), items: map[string]*list.Element{}}
}

// digest keys a query for one model: HMAC-SHA256 with the secret when one
// is set, else SHA-256. The query text itself is never stored.
func (q *queryCache) digest(modelID int64, text string) []byte {
	var h hash.Hash
	if len(q.cfg.Secret) > 0 {
		h = hmac.New(sha256.New, q.cfg.Secret)
	} else {
		h = sha256.New()
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(modelID))
	h.Write(b[:])
	h.Write([]byte(text))
	return h.Sum(nil)
}

func (q *queryCache) get(key []byte) ([]float32, bool) {
	if q.cfg.Size < 0 {
		return nil, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	el, ok := q.items[string(key)]
	if !ok {
		return nil, false
	}
	q.ll.MoveToFront(el)
	return el.Value.(*cacheEntry).vec, true
}

func (q *queryCache) put(key []byte, vec []float32) {
	if q.cfg.Size < 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	k := string(key)
	if el, ok := q.items[k]; ok {
		el.Value.(*cacheEntry).vec = vec
		q.ll.MoveToFront(el)
		return
	}
	q.items[k] = q.ll.PushFront(&cacheEntry{key: k, vec: vec})
	for q.ll.Len() > q.cfg.Size {
		last := q.ll.Back()
		q.ll.Remove(last)
		delete(q.items, last.Value.(*cacheEntry).key)
	}
}

// QueryEmbeddingSource says where a query embedding came from.
type QueryEmbeddingSource string

// Query embedding sources.
const (
	FromMemoryCache QueryEmbeddingSource = "memory_cache"
	FromStoreCache  QueryEmbeddingSource = "store_cache"
	FromProvider    QueryEmbeddingSource = "provider"
)

// embedQuery returns the embedding of a search query: from the in-process
// LRU, else the persisted cache, else the provider. A provider's answer is
// put in the LRU at once; persist, non-nil then, writes it to the store's
// cache and may run beside the search. beforeProvider, when not nil, is
// called once the caches have missed, just before the provider is asked:
// work that does not need the vector can start there without competing
// with the cache read. Cache failures never fail a search; they are
// logged.
func (c *Client) embedQuery(ctx context.Context, text string, beforeProvider func()) (vec []float32, src QueryEmbeddingSource, persist func(context.Context), err error) {
	key := c.qcache.digest(c.modelID, text)
	if v, ok := c.qcache.get(key); ok {
		return v, FromMemoryCache, nil, nil
	}
	client := c.principal.clientID()
	if !c.cfg.QueryCache.DisablePersist {
		v, ok, err := c.store.GetQueryEmbedding(ctx, c.ws, client, c.modelID, key)
		if err != nil {
			c.log.Warn("query embedding cache read failed", "err", err)
		} else if ok && len(v) == c.embedder.Model().Dimensions {
			c.qcache.put(key, v)
			return v, FromStoreCache, nil, nil
		}
	}
	if beforeProvider != nil {
		beforeProvider()
	}
	vecs, err := c.embedder.EmbedBatch(ctx, []string{text})
	c.noteEmbed(err)
	if err != nil {
		return nil, FromProvider, nil, err
	}
	if len(vecs) != 1 || len(vecs[0]) != c.embedder.Model().Dimensions {
		return nil, FromProvider, nil, ErrEmbeddingFailed
	}
	v := vecs[0]
	c.qcache.put(key, v)
	if !c.cfg.QueryCache.DisablePersist {
		persist = func(ctx context.Context) {
			if err := c.store.PutQueryEmbedding(ctx, c.ws, client, c.modelID, key, v); err != nil {
				c.log.Warn("query embedding cache write failed", "err", err)
			}
		}
	}
	return v, FromProvider, persist, nil
}
