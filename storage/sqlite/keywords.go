package sqlite

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
)

// The keyword index answers the keyword branch from memory, beside the
// vector index and kept current the same way (change_log): per workspace,
// every chunk's content and stored tsvector, and per lexeme the chunks that
// hold it. An FTS5 table answered the same questions from the file (until
// migration 006), but under
// concurrent writes every read transaction starts with an emptied page
// cache, and its steps re-read segment pages, chunk rows and entity rows
// for each of the up to 200 chunks of a pool: two thirds of a search's CPU.
//
// A posting list holds chunk slots in ascending order. Slots are assigned
// in chunk rid order (a new chunk gets the largest rid), so walking a list
// visits chunks in rid order, the order FTS5 yielded them in, and the
// probes' "first Limit matches" are the same chunks as before. A deleted
// chunk leaves a dead slot behind in the lists it was in; the set is
// rebuilt when dead slots outnumber live ones, or when a chunk arrives out
// of rid order (another process's import, a reused rid).

// kwSet is one workspace's keyword index.
type kwSet struct {
	rid     []int64
	chunk   []uuid.UUID
	ent     []int32 // entity slot (space.ents)
	content []string
	tsv     [][]byte
	live    []bool
	// Where each lexeme of a chunk's tsvector starts in it, so scoring
	// finds the query's lexemes by bisection instead of decoding them all:
	// the chunk's offsets are offs[offAt[s]:offAt[s]+offN[s]] (offAt is -1
	// for a tsvector out of byte order or malformed).
	offs  []uint32
	offAt []int32
	offN  []int32

	nlive, ndead int
	unordered    bool // a chunk was added with a rid below the last slot's

	post    map[string]*postList
	slot    map[int64]int32     // chunk rid → live slot
	byChunk map[uuid.UUID]int32 // chunk id → live slot
}

// postList is the ascending slots of the chunks holding one lexeme.
type postList struct{ s []int32 }

func newKwSet() *kwSet {
	return &kwSet{post: map[string]*postList{}, slot: map[int64]int32{}, byChunk: map[uuid.UUID]int32{}}
}

// kwDoc is a chunk as the keyword index holds it.
type kwDoc struct {
	rid     int64
	chunk   uuid.UUID
	ent     int32
	content string
	tsv     []byte
}

// add appends a chunk. A malformed tsvector indexes the lexemes before the
// fault; scoring the chunk reports it.
func (ks *kwSet) add(d kwDoc) {
	s := int32(len(ks.rid))
	if n := len(ks.rid); n > 0 && ks.rid[n-1] >= d.rid {
		ks.unordered = true
	}
	ks.rid = append(ks.rid, d.rid)
	ks.chunk = append(ks.chunk, d.chunk)
	ks.ent = append(ks.ent, d.ent)
	ks.content = append(ks.content, d.content)
	ks.tsv = append(ks.tsv, d.tsv)
	ks.live = append(ks.live, true)
	ks.nlive++
	ks.slot[d.rid] = s
	ks.byChunk[d.chunk] = s
	at, sorted := len(ks.offs), true
	var prev []byte
	err := walkTSV(d.tsv, func(word []byte, _ int, _ []byte) {
		p := ks.post[string(word)]
		if p == nil {
			p = &postList{}
			ks.post[string(word)] = p
		}
		p.s = append(p.s, s)
		if prev != nil && string(word) <= string(prev) {
			sorted = false
		}
		prev = word
		// The word's bytes lie within the tsvector: its entry (length
		// varint first) starts where the varint before them does.
		at := cap(d.tsv) - cap(word) // where the word's bytes start
		start := at - uvarintLen(uint64(len(word)))
		if n, k := binary.Uvarint(d.tsv[max(start, 0):at]); start < 0 || k != at-start || n != uint64(len(word)) {
			sorted = false // a length not in its shortest form
			return
		}
		ks.offs = append(ks.offs, uint32(start))
	})
	if err != nil || !sorted || len(d.tsv) > math.MaxUint32 {
		ks.offs = ks.offs[:at]
		ks.offAt = append(ks.offAt, -1)
		ks.offN = append(ks.offN, 0)
		return
	}
	ks.offAt = append(ks.offAt, int32(at))
	ks.offN = append(ks.offN, int32(len(ks.offs)-at))
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// remove drops the chunk with rid, if held.
func (ks *kwSet) remove(rid int64) {
	s, ok := ks.slot[rid]
	if !ok {
		return
	}
	ks.live[s] = false
	ks.content[s], ks.tsv[s] = "", nil
	delete(ks.slot, rid)
	if cur, ok := ks.byChunk[ks.chunk[s]]; ok && cur == s {
		delete(ks.byChunk, ks.chunk[s])
	}
	ks.nlive--
	ks.ndead++
}

// needsRebuild reports whether dead or out-of-order slots call for a
// rebuild.
func (ks *kwSet) needsRebuild() bool {
	return ks.unordered || (ks.ndead > 1024 && ks.ndead > ks.nlive)
}

// rebuilt returns the set's live chunks in a new set, in rid order.
func (ks *kwSet) rebuilt() *kwSet {
	order := make([]int32, 0, ks.nlive)
	for s, l := range ks.live {
		if l {
			order = append(order, int32(s))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		switch {
		case ks.rid[a] < ks.rid[b]:
			return -1
		case ks.rid[a] > ks.rid[b]:
			return 1
		}
		return 0
	})
	nk := newKwSet()
	for _, s := range order {
		nk.add(kwDoc{ks.rid[s], ks.chunk[s], ks.ent[s], ks.content[s], ks.tsv[s]})
	}
	nk.unordered = false // equal rids (never two live chunks) cannot occur
	return nk
}

// lists returns the posting lists of the given query lexemes, and false
// when one of them is in no chunk (the conjunction is empty).
func (ks *kwSet) lists(q *terms, lexemes []int) ([][]int32, bool) {
	out := make([][]int32, 0, len(lexemes))
	for _, l := range lexemes {
		p := ks.post[q.Lexemes[l]]
		if p == nil || len(p.s) == 0 {
			return nil, false
		}
		out = append(out, p.s)
	}
	return out, true
}

// matching returns the ascending slots holding every one of the lexemes
// (nil when there are none, or no lexeme is given).
func (ks *kwSet) matching(q *terms, lexemes []int) []int32 {
	if len(lexemes) == 0 {
		return nil
	}
	ls, ok := ks.lists(q, lexemes)
	if !ok {
		return nil
	}
	return intersect(ls)
}

// intersect returns the ascending values present in every ascending list:
// the shortest list's values, each looked up in the others by galloping
// from the previous position.
func intersect(lists [][]int32) []int32 {
	if len(lists) == 1 {
		return lists[0]
	}
	lists = slices.Clone(lists)
	slices.SortFunc(lists, func(a, b []int32) int { return len(a) - len(b) })
	out := make([]int32, 0, len(lists[0]))
	pos := make([]int, len(lists))
next:
	for _, v := range lists[0] {
		for j := 1; j < len(lists); j++ {
			l := lists[j]
			i := gallop(l, pos[j], v)
			pos[j] = i
			if i == len(l) {
				break next
			}
			if l[i] != v {
				continue next
			}
		}
		out = append(out, v)
	}
	return out
}

// gallop returns the first index at or after from whose value is ≥ v.
func gallop(l []int32, from int, v int32) int {
	if from >= len(l) || l[from] >= v {
		return from
	}
	// l[from] < v: widen the step until it overshoots, then bisect.
	lo, step := from, 1
	hi := from + step
	for hi < len(l) && l[hi] < v {
		lo = hi
		step <<= 1
		hi = from + step
	}
	hi = min(hi, len(l))
	// l[lo] < v; the answer is in (lo, hi].
	i, _ := slices.BinarySearch(l[lo+1:hi], v)
	return lo + 1 + i
}

// union walks the ascending union of lists, calling fn for each value once,
// until fn returns false.
func union(lists [][]int32, fn func(int32) bool) {
	pos := make([]int, len(lists))
	for {
		best, at := int32(0), -1
		for j, l := range lists {
			if pos[j] < len(l) && (at < 0 || l[pos[j]] < best) {
				best, at = l[pos[j]], j
			}
		}
		if at < 0 {
			return
		}
		for j, l := range lists {
			if pos[j] < len(l) && l[pos[j]] == best {
				pos[j]++
			}
		}
		if !fn(best) {
			return
		}
	}
}

// kwView is a workspace's keyword and entity state under the index's read
// lock, with the filter's admitted entities.
type kwView struct {
	sp    *space
	ks    *kwSet
	admit []bool
}

// view returns ws's keyword state for filter f; ok is false when the
// workspace has no chunk. The caller holds ix.mu for reading.
func (ix *index) view(ws string, f *postgram.EntityFilter) (kwView, bool) {
	sp := ix.spaces[ws]
	if sp == nil || sp.kw == nil || sp.kw.nlive == 0 {
		return kwView{}, false
	}
	return kwView{sp: sp, ks: sp.kw, admit: sp.admitted(f)}, true
}

// ok reports whether slot s is a live chunk the filter admits.
func (v *kwView) ok(s int32) bool {
	return v.ks.live[s] && v.admit[v.ks.ent[s]]
}

// hit scores slot s against q (bare: ids only).
func (v *kwView) hit(s int32, q *terms, d *docTerms, bare bool) (postgram.KeywordHit, error) {
	e := &v.sp.ents[v.ks.ent[s]]
	h := postgram.KeywordHit{ChunkID: v.ks.chunk[s], EntityID: e.id}
	if bare {
		return h, nil
	}
	if err := v.ks.scan(s, q, d); err != nil {
		return h, fmt.Errorf("chunk %s: %w", h.ChunkID, err)
	}
	h.Matched, h.Rank = q.mask(d), float64(q.rankCD(d))
	h.Content, h.UpdatedAt = v.ks.content[s], fromMicros(e.updated)
	return h, nil
}

// scan reads slot s's positions of q's lexemes into d.
func (ks *kwSet) scan(s int32, q *terms, d *docTerms) error {
	at := ks.offAt[s]
	if at < 0 {
		return q.scan(ks.tsv[s], d)
	}
	q.Reset(d)
	tsv, offs := ks.tsv[s], ks.offs[at:at+ks.offN[s]]
	lo := 0
	for i, lex := range q.Lexemes {
		// The first lexeme of the chunk at or after lex (both sorted).
		hi := len(offs)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if string(wordAt(tsv, offs[m])) < lex {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo == len(offs) {
			break
		}
		w := wordAt(tsv, offs[lo])
		if string(w) != lex {
			continue
		}
		rest := tsv[int(offs[lo])+uvarintLen(uint64(len(w)))+len(w):]
		np, k := binary.Uvarint(rest)
		if k <= 0 {
			return errBadTSV
		}
		rest = rest[k:]
		pl, k := binary.Uvarint(rest)
		if k <= 0 || uint64(len(rest)-k) < pl {
			return errBadTSV
		}
		d.Present[i] = true
		d.Pos[i] = decodePositions(int(np), rest[k:k+int(pl)], d.Pos[i])
		lo++
	}
	return nil
}

// wordAt returns the lexeme whose entry starts at off in a well-formed
// tsvector.
func wordAt(tsv []byte, off uint32) []byte {
	if n := uint32(tsv[off]); n < 0x80 { // a lexeme under 128 bytes
		return tsv[off+1 : off+1+n]
	}
	n, k := binary.Uvarint(tsv[off:])
	return tsv[int(off)+k : int(off)+k+int(n)]
}

// termCount counts the live chunks of ws holding every lexeme of each
// term, up to limit (0 for a term without lexemes), and the workspace's
// live chunks.
func (ix *index) termCounts(ws string, q *terms, limit int) ([]int, int) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	counts := make([]int, len(q.Of))
	sp := ix.spaces[ws]
	if sp == nil || sp.kw == nil {
		return counts, 0
	}
	ks := sp.kw
	for i, ls := range q.Of {
		n := 0
		for _, s := range ks.matching(q, ls) {
			if ks.live[s] {
				if n++; n >= limit {
					break
				}
			}
		}
		counts[i] = n
	}
	return counts, ks.nlive
}

// chunkTexts returns, for the chunks of ws with the given rids that are
// live and admitted by f, their entity id, content and entity update time.
func (ix *index) chunkTexts(ws string, rids []int64, f *postgram.EntityFilter) map[int64]chunkRow {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make(map[int64]chunkRow, len(rids))
	sp := ix.spaces[ws]
	if sp == nil || sp.kw == nil {
		return out
	}
	ks := sp.kw
	for _, rid := range rids {
		s, ok := ks.slot[rid]
		if !ok {
			continue
		}
		e := &sp.ents[ks.ent[s]]
		if !admits(f, e) {
			continue
		}
		out[rid] = chunkRow{entity: e.id, content: ks.content[s], updated: fromMicros(e.updated)}
	}
	return out
}

// keywordProbe runs a probe (see Store.KeywordProbe) over the terms in use,
// which all have lexemes. It returns the hits and their chunk rids.
func (ix *index) keywordProbe(ws string, q *postgram.KeywordQuery, t *terms, use []int, holds func(uint32) bool) ([]postgram.KeywordHit, []int64, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if !ix.loaded {
		return nil, nil, errNotMigrated
	}
	v, ok := ix.view(ws, &q.Filter)
	if !ok {
		return nil, nil, nil
	}
	var exclude map[int32]bool
	if len(q.Exclude) > 0 {
		exclude = make(map[int32]bool, len(q.Exclude))
		for _, id := range q.Exclude {
			if s, ok := v.ks.byChunk[id]; ok {
				exclude[s] = true
			}
		}
	}
	var (
		hits    []postgram.KeywordHit
		rids    []int64
		d       docTerms
		scanErr error
	)
	// take adds slot s when it qualifies; false stops the walk.
	take := func(s int32, bare, check bool) bool {
		if !v.ok(s) || exclude[s] {
			return true
		}
		h, err := v.hit(s, t, &d, bare && !check)
		if err != nil {
			scanErr = err
			return false
		}
		if check && !holds(h.Matched) {
			return true
		}
		if bare {
			h = postgram.KeywordHit{ChunkID: h.ChunkID, EntityID: h.EntityID}
		}
		hits = append(hits, h)
		rids = append(rids, v.ks.rid[s])
		return len(hits) < q.Limit
	}
	switch {
	case len(q.Only) > 0:
		// The listed chunks, each once, in the order given.
		seen := make(map[int32]bool, len(q.Only))
		for _, id := range q.Only {
			s, ok := v.ks.byChunk[id]
			if !ok || seen[s] {
				continue
			}
			seen[s] = true
			if !take(s, q.Bare, true) {
				break
			}
		}
	case q.Mode == postgram.ProbeAny:
		lists := make([][]int32, 0, len(use))
		for _, i := range use {
			if m := v.ks.matching(t, t.Of[i]); len(m) > 0 {
				lists = append(lists, m)
			}
		}
		union(lists, func(s int32) bool { return take(s, q.Bare, false) })
	default: // ProbeAll over the terms in use, or ProbeTerm's one term
		for _, s := range v.ks.matching(t, lexemesOf(t, use)) {
			if !take(s, q.Bare, false) {
				break
			}
		}
	}
	if scanErr != nil {
		return nil, nil, scanErr
	}
	return hits, rids, nil
}

// lexemesOf returns the distinct query lexemes of the given terms.
func lexemesOf(t *terms, use []int) []int {
	if len(use) == 1 {
		return t.Of[use[0]]
	}
	var out []int
	for _, i := range use {
		out = append(out, t.Of[i]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// keywordFill builds a keyword pool (see Store.KeywordFill).
func (ix *index) keywordFill(ws string, q *postgram.KeywordFillQuery, t *terms) (postgram.KeywordFillResult, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var res postgram.KeywordFillResult
	if !ix.loaded {
		return res, errNotMigrated
	}
	v, ok := ix.view(ws, &q.Filter)
	if !ok {
		return res, nil
	}
	res.Hits = make([]postgram.KeywordHit, 0, q.Limit)
	seen := make(map[int32]bool, q.Limit)
	var d docTerms
	step := func(slots []int32) error {
		for _, s := range slots {
			if len(res.Hits) >= q.Limit {
				return nil
			}
			if seen[s] || !v.ok(s) {
				continue
			}
			seen[s] = true
			h, err := v.hit(s, t, &d, false)
			if err != nil {
				return err
			}
			res.Hits = append(res.Hits, h)
		}
		return nil
	}
	var use []int
	for i, ls := range t.Of {
		if len(ls) > 0 {
			use = append(use, i)
		}
	}
	if len(use) > 0 {
		if err := step(v.ks.matching(t, lexemesOf(t, use))); err != nil {
			return postgram.KeywordFillResult{}, err
		}
	}
	res.Conjunction = len(res.Hits)
	for _, i := range q.Order {
		if len(res.Hits) >= q.Limit {
			break
		}
		if err := step(v.ks.matching(t, t.Of[i])); err != nil {
			return postgram.KeywordFillResult{}, err
		}
	}
	if len(res.Hits) == 0 {
		res.Hits = nil
	}
	return res, nil
}
