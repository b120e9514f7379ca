package kwindex

import (
	"cmp"
	"math"
	"slices"

	"github.com/google/uuid"
)

// Set is one workspace's keyword index.
type Set struct {
	rid     []int64
	chunk   []uuid.UUID
	ent     []int32 // entity slot (space.ents)
	content []string
	tsv     [][]byte
	length  []int32 // lexeme positions per chunk (ranking v2's BM25)
	live    []bool
	// walk marks chunks scored by walking their tsvector: one out of byte
	// order (it may repeat a lexeme) or malformed.
	walk []bool

	nlive, ndead int
	totalLen     int64 // the live chunks' lengths
	unordered    bool  // a chunk was added with a rid below the last slot's

	post    map[string]*postList
	slot    map[int64]int32     // chunk rid → live slot
	byChunk map[uuid.UUID]int32 // chunk id → live slot
	byEnt   map[int32][]int32   // entity slot → its live chunk slots, ascending
}

// postList is the ascending slots of the chunks holding one lexeme, and
// where in each chunk's tsvector that lexeme's positions are encoded (the
// offset of their count), so scoring a chunk reads its positions there
// instead of searching its tsvector.
type postList struct {
	s    []int32
	pos  []uint32
	live int32 // live chunks in s: the lexeme's document frequency
}

// New returns an empty set.
func New() *Set {
	return &Set{post: map[string]*postList{}, slot: map[int64]int32{}, byChunk: map[uuid.UUID]int32{}, byEnt: map[int32][]int32{}}
}

// Doc is a chunk as the keyword index holds it.
type Doc struct {
	RID     int64 // the store's row number: slots follow its order
	Chunk   uuid.UUID
	Ent     int32 // the entity's slot in the store's entity table
	Content string
	TSV     []byte // encoded (Encode)
}

// Add appends a chunk. A malformed tsvector indexes the lexemes before the
// fault; scoring the chunk reports it.
func (ks *Set) Add(d Doc) {
	s := int32(len(ks.rid))
	if n := len(ks.rid); n > 0 && ks.rid[n-1] >= d.RID {
		ks.unordered = true
	}
	ks.rid = append(ks.rid, d.RID)
	ks.chunk = append(ks.chunk, d.Chunk)
	ks.ent = append(ks.ent, d.Ent)
	ks.content = append(ks.content, d.Content)
	ks.tsv = append(ks.tsv, d.TSV)
	ks.live = append(ks.live, true)
	ks.nlive++
	ks.slot[d.RID] = s
	ks.byChunk[d.Chunk] = s
	ks.byEnt[d.Ent] = append(ks.byEnt[d.Ent], s)
	sorted := true
	var prev []byte
	var length int32
	err := Walk(d.TSV, func(word []byte, npos int, _ []byte) {
		p := ks.post[string(word)]
		if p == nil {
			p = &postList{}
			ks.post[string(word)] = p
		}
		// The word is a subslice of the tsvector; its positions' count
		// follows it.
		p.s = append(p.s, s)
		p.pos = append(p.pos, uint32(cap(d.TSV)-cap(word)+len(word)))
		p.live++
		length += int32(npos)
		if prev != nil && string(word) <= string(prev) {
			sorted = false
		}
		prev = word
	})
	ks.walk = append(ks.walk, err != nil || !sorted || len(d.TSV) > math.MaxUint32)
	ks.length = append(ks.length, length)
	ks.totalLen += int64(length)
}

// Remove drops the chunk with rid, if held.
func (ks *Set) Remove(rid int64) {
	s, ok := ks.slot[rid]
	if !ok {
		return
	}
	ks.live[s] = false
	// The lexemes it was indexed under: the same walk as add's.
	_ = Walk(ks.tsv[s], func(word []byte, _ int, _ []byte) {
		if p := ks.post[string(word)]; p != nil {
			p.live--
		}
	})
	ks.totalLen -= int64(ks.length[s])
	if l := ks.byEnt[ks.ent[s]]; len(l) > 0 {
		if i := slices.Index(l, s); i >= 0 {
			l = slices.Delete(l, i, i+1)
		}
		if len(l) == 0 {
			delete(ks.byEnt, ks.ent[s])
		} else {
			ks.byEnt[ks.ent[s]] = l
		}
	}
	ks.content[s], ks.tsv[s] = "", nil
	delete(ks.slot, rid)
	if cur, ok := ks.byChunk[ks.chunk[s]]; ok && cur == s {
		delete(ks.byChunk, ks.chunk[s])
	}
	ks.nlive--
	ks.ndead++
}

// NeedsRebuild reports whether dead or out-of-order slots call for a
// rebuild (Rebuilt).
func (ks *Set) NeedsRebuild() bool {
	return ks.unordered || (ks.ndead > 1024 && ks.ndead > ks.nlive)
}

// Rebuilt returns the set's live chunks in a new set, in rid order.
func (ks *Set) Rebuilt() *Set {
	order := make([]int32, 0, ks.nlive)
	for s, l := range ks.live {
		if l {
			order = append(order, int32(s))
		}
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(ks.rid[a], ks.rid[b]) })
	nk := New()
	for _, s := range order {
		nk.Add(Doc{ks.rid[s], ks.chunk[s], ks.ent[s], ks.content[s], ks.tsv[s]})
	}
	nk.unordered = false // equal rids (never two live chunks) cannot occur
	return nk
}

// lists returns the posting lists of the given query lexemes, and false
// when one of them is in no chunk (the conjunction is empty).
func (ks *Set) lists(q *Terms, lexemes []int) ([][]int32, bool) {
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
func (ks *Set) matching(q *Terms, lexemes []int) []int32 {
	if len(lexemes) == 0 {
		return nil
	}
	ls, ok := ks.lists(q, lexemes)
	if !ok {
		return nil
	}
	return intersect(ls)
}

// termMatching returns the ascending slots matching term i: holding all of
// its lexemes, or any one of its alternatives.
func (ks *Set) termMatching(q *Terms, i int) []int32 {
	own := ks.matching(q, q.Of[i])
	if len(q.Alt[i]) == 0 {
		return own
	}
	lists := [][]int32{own}
	for _, l := range q.Alt[i] {
		if p := ks.post[q.Lexemes[l]]; p != nil {
			lists = append(lists, p.s)
		}
	}
	var out []int32
	union(lists, func(v int32) bool {
		out = append(out, v)
		return true
	})
	return out
}

// conjunction returns the ascending slots matching every term of use.
func (ks *Set) conjunction(q *Terms, use []int) []int32 {
	alts := false
	for _, i := range use {
		alts = alts || len(q.Alt[i]) > 0
	}
	if !alts {
		return ks.matching(q, lexemesOf(q, use))
	}
	lists := make([][]int32, 0, len(use))
	for _, i := range use {
		m := ks.termMatching(q, i)
		if len(m) == 0 {
			return nil
		}
		lists = append(lists, m)
	}
	return intersect(lists)
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

// Link sets every live chunk's entity slot to what resolve returns for its
// slot, dropping the chunks whose entity resolve does not know (false): a
// set loaded before the entities were given slots.
func (ks *Set) Link(resolve func(slot int32) (int32, bool)) {
	clear(ks.byEnt)
	for s, l := range ks.live {
		if !l {
			continue
		}
		e, ok := resolve(int32(s))
		if !ok {
			ks.Remove(ks.rid[s])
			continue
		}
		ks.ent[s] = e
		ks.byEnt[e] = append(ks.byEnt[e], int32(s))
	}
}

// Holds reports whether the chunk with rid is held, as chunk.
func (ks *Set) Holds(rid int64, chunk uuid.UUID) bool {
	s, ok := ks.slot[rid]
	return ok && ks.chunk[s] == chunk
}

// Lookup returns the entity slot and content of the chunk with rid.
func (ks *Set) Lookup(rid int64) (ent int32, content string, ok bool) {
	s, ok := ks.slot[rid]
	if !ok {
		return 0, "", false
	}
	return ks.ent[s], ks.content[s], true
}

// Live returns the number of chunks held.
func (ks *Set) Live() int {
	if ks == nil {
		return 0
	}
	return ks.nlive
}
