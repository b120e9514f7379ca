package vecscan

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// The set keeps a log of the chunks (rids) it changed, so that TopKCached
// can bring a remembered result up to date by ranking only those. gen
// counts the changes; log[i] is the rid changed from generation logBase+i
// to logBase+i+1. A bulk change (Alloc, Fill, QuantizeSlots, Compact)
// empties the log: no remembered result survives it.
const (
	changeLogKeep = 4096 // changes the log keeps at least
	cachedQueries = 256  // remembered results per set
	// cachedRefreshMax is the most changed chunks a remembered result is
	// brought up to date with; past that a full scan is as cheap.
	cachedRefreshMax = 2048
)

// topKCache holds a set's remembered results, by query.
type topKCache struct {
	mu      sync.Mutex
	seed    maphash.Seed
	entries map[uint64]*cachedTopK

	reused, scanned atomic.Int64 // TopKCached calls answered each way
}

type cachedTopK struct {
	x       []float32 // the query
	filter  string
	maskGen uint64
	k       int
	gen     uint64 // the set's generation the result is of
	res     []Scored
}

func (vs *Set) noteChange(rid int64) {
	vs.gen++
	vs.log = append(vs.log, rid)
	if len(vs.log) >= 2*changeLogKeep {
		n := len(vs.log) - changeLogKeep
		vs.log = append(vs.log[:0], vs.log[n:]...)
		vs.logBase += uint64(n)
	}
}

func (vs *Set) noteReset() {
	vs.gen++
	vs.log, vs.logBase = vs.log[:0], vs.gen
}

// changedSince returns the rids changed after generation g (with repeats),
// or false when the log no longer reaches back to g.
func (vs *Set) changedSince(g uint64) ([]int64, bool) {
	if g < vs.logBase || g > vs.gen {
		return nil, false
	}
	return vs.log[g-vs.logBase:], true
}

// TopKCached is TopK for a query that may have been asked before. It
// remembers the last results of up to 256 queries; asked again with the
// same vector, k, filter and maskGen, it ranks only the vectors stored,
// replaced or removed since, and merges them with the remembered result.
// That is TopK's result, exactly: a remembered result holds the k best of
// the vectors then admitted, and if none of them changed since, the k best
// now are among them and the changed ones (a result that holds a changed
// vector is not used).
//
// filter names the filter admitted comes from; maskGen must change
// whenever admitted may have changed for an entity that already had
// vectors in the set (a new entity's vectors are changes of the set, so a
// new entity need not change it). Like TopK it may run concurrently with
// other searches, not with changes of the set.
func (vs *Set) TopKCached(x []float32, admitted []bool, k, workers int, filter string, maskGen uint64) []Scored {
	if k <= 0 {
		return vs.TopK(x, admitted, k, workers)
	}
	c := &vs.cache
	c.mu.Lock()
	if c.entries == nil {
		c.seed, c.entries = maphash.MakeSeed(), map[uint64]*cachedTopK{}
	}
	key := queryKey(c.seed, x, filter, k)
	e := c.entries[key]
	c.mu.Unlock()
	if e != nil && e.k == k && e.maskGen == maskGen && e.filter == filter && sameBits(e.x, x) {
		if res, ok := vs.refresh(e, x, admitted); ok {
			c.reused.Add(1)
			c.remember(key, &cachedTopK{x: e.x, filter: filter, maskGen: maskGen, k: k, gen: vs.gen, res: res})
			return slices.Clone(res)
		}
	}
	c.scanned.Add(1)
	gen := vs.gen
	res := vs.TopK(x, admitted, k, workers)
	c.remember(key, &cachedTopK{x: slices.Clone(x), filter: filter, maskGen: maskGen, k: k, gen: gen, res: slices.Clone(res)})
	return res
}

// CacheCounts returns how many TopKCached calls brought a remembered
// result up to date and how many scanned the set.
func (vs *Set) CacheCounts() (reused, scanned int64) {
	return vs.cache.reused.Load(), vs.cache.scanned.Load()
}

func (c *topKCache) remember(key uint64, e *cachedTopK) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= cachedQueries {
		for k := range c.entries { // drop one, any
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = e
}

// refresh brings a remembered result up to date (see TopKCached), or
// reports false when it cannot.
func (vs *Set) refresh(e *cachedTopK, x []float32, admitted []bool) ([]Scored, bool) {
	changed, ok := vs.changedSince(e.gen)
	if !ok || len(changed) > cachedRefreshMax {
		return nil, false
	}
	set := make(map[int64]struct{}, len(changed))
	for _, rid := range changed {
		set[rid] = struct{}{}
	}
	out := make([]Scored, 0, len(e.res)+len(set))
	for _, r := range e.res {
		if _, ch := set[r.RID]; ch {
			return nil, false
		}
		s, ok := vs.slot[r.RID]
		if !ok {
			return nil, false
		}
		r.Slot = s // a removal moves the last slot
		out = append(out, r)
	}
	xss := SquaredNorm(x) // as quantizeQuery sums it
	var buf []float32
	for rid := range set {
		s, ok := vs.slot[rid]
		if !ok || !admitted[vs.ent[s]] {
			continue // removed, or not admitted
		}
		v := vs.vectorInto(s, buf)
		buf = v
		out = append(out, Scored{Slot: s, RID: rid, Chunk: vs.chunk[s], Sim: cosine(x, xss, v, vs.ss[s])})
	}
	slices.SortFunc(out, lessScored)
	return out[:min(e.k, len(out))], true
}

func queryKey(seed maphash.Seed, x []float32, filter string, k int) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var b [4]byte
	for _, v := range x {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
		h.Write(b[:])
	}
	h.WriteString(filter)
	binary.LittleEndian.PutUint32(b[:], uint32(k))
	h.Write(b[:])
	return h.Sum64()
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
