package sqlite

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
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

func newKwSet() *kwSet {
	return &kwSet{post: map[string]*postList{}, slot: map[int64]int32{}, byChunk: map[uuid.UUID]int32{}, byEnt: map[int32][]int32{}}
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
	ks.byEnt[d.ent] = append(ks.byEnt[d.ent], s)
	sorted := true
	var prev []byte
	var length int32
	err := walkTSV(d.tsv, func(word []byte, npos int, _ []byte) {
		p := ks.post[string(word)]
		if p == nil {
			p = &postList{}
			ks.post[string(word)] = p
		}
		// The word is a subslice of the tsvector; its positions' count
		// follows it.
		p.s = append(p.s, s)
		p.pos = append(p.pos, uint32(cap(d.tsv)-cap(word)+len(word)))
		p.live++
		length += int32(npos)
		if prev != nil && string(word) <= string(prev) {
			sorted = false
		}
		prev = word
	})
	ks.walk = append(ks.walk, err != nil || !sorted || len(d.tsv) > math.MaxUint32)
	ks.length = append(ks.length, length)
	ks.totalLen += int64(length)
}

// remove drops the chunk with rid, if held.
func (ks *kwSet) remove(rid int64) {
	s, ok := ks.slot[rid]
	if !ok {
		return
	}
	ks.live[s] = false
	// The lexemes it was indexed under: the same walk as add's.
	_ = walkTSV(ks.tsv[s], func(word []byte, _ int, _ []byte) {
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
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(ks.rid[a], ks.rid[b]) })
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

// termMatching returns the ascending slots matching term i: holding all of
// its lexemes, or any one of its alternatives.
func (ks *kwSet) termMatching(q *terms, i int) []int32 {
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
func (ks *kwSet) conjunction(q *terms, use []int) []int32 {
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

// kwView is a workspace's keyword and entity state under the index's read
// lock, with the filter's admitted entities.
type kwView struct {
	sp    *space
	ks    *kwSet
	admit []bool
}

// view returns ws's keyword state for filter f; ok is false when the
// workspace has no chunk. The caller holds ix.mu for reading.
func (ix *index) view(ws string, f *driver.EntityFilter) (kwView, bool) {
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

// hit returns slot s's hit without scores (ids, and unless bare its
// content and update time).
func (v *kwView) hit(s int32, bare bool) driver.KeywordHit {
	e := &v.sp.ents[v.ks.ent[s]]
	h := driver.KeywordHit{ChunkID: v.ks.chunk[s], EntityID: e.id}
	if !bare {
		h.Content, h.UpdatedAt = v.ks.content[s], fromMicros(e.UpdatedAt)
	}
	return h
}

// score returns each slot's term mask and rank against q, and with feats
// its ranking-v2 features (see postgram.KeywordHit). It reads the positions
// through the query lexemes' posting lists, walking each list once over the
// slots in ascending order (galloping), so a chunk's tsvector is only
// touched where its positions are.
func (v *kwView) score(slots []int32, q *terms, feats bool) ([]uint32, []float32, []features, error) {
	ks, n := v.ks, len(q.Lexemes)
	present := make([]bool, len(slots)*n)
	posv := make([][]uint16, len(slots)*n)
	docs := make([]docTerms, len(slots))
	for k := range docs {
		docs[k] = docTerms{Present: present[k*n : (k+1)*n : (k+1)*n], Pos: posv[k*n : (k+1)*n : (k+1)*n]}
	}
	order := make([]int, len(slots))
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(a, b int) int { return int(slots[a]) - int(slots[b]) })
	var arena []uint16
	for l, lex := range q.Lexemes {
		p := ks.post[lex]
		if p == nil {
			continue
		}
		at := 0
		for _, k := range order {
			s := slots[k]
			if at = gallop(p.s, at, s); at == len(p.s) {
				break
			}
			if p.s[at] != s || ks.walk[s] {
				continue
			}
			rest := ks.tsv[s][p.pos[at]:]
			np, m := binary.Uvarint(rest)
			if m <= 0 {
				return nil, nil, nil, fmt.Errorf("chunk %s: %w", ks.chunk[s], errBadTSV)
			}
			rest = rest[m:]
			pl, m := binary.Uvarint(rest)
			if m <= 0 || uint64(len(rest)-m) < pl {
				return nil, nil, nil, fmt.Errorf("chunk %s: %w", ks.chunk[s], errBadTSV)
			}
			start := len(arena)
			arena = decodePositions(int(np), rest[m:m+int(pl)], arena)
			docs[k].Present[l] = true
			docs[k].Pos[l] = arena[start:len(arena):len(arena)]
		}
	}
	masks, ranks := make([]uint32, len(slots)), make([]float32, len(slots))
	var fs []features
	var heads map[int32]int32 // entity slot → its index in hfs
	var hfs []headFeatures
	var first []uint16     // per query lexeme, its first position in a head
	var tfs, hpos []uint16 // every chunk's TF and every head's positions, one allocation each
	if feats {
		fs = make([]features, len(slots))
		heads = make(map[int32]int32, len(slots))
		hfs = make([]headFeatures, 0, len(slots))
		first = make([]uint16, len(q.Lexemes))
		tfs = make([]uint16, 0, len(slots)*q.Slots())
		hpos = make([]uint16, 0, len(slots)*q.Slots())
	}
	for k, s := range slots {
		if ks.walk[s] {
			if err := q.scan(ks.tsv[s], &docs[k]); err != nil {
				return nil, nil, nil, fmt.Errorf("chunk %s: %w", ks.chunk[s], err)
			}
		}
		masks[k] = q.mask(&docs[k])
		if !feats {
			ranks[k] = q.rankCD(&docs[k])
			continue
		}
		e := ks.ent[s]
		var hf headFeatures
		if at, ok := heads[e]; ok {
			hf = hfs[at]
		} else {
			a := &v.sp.ents[e]
			hf = headFeatures{typ: a.Type, tags: a.Tags, len: a.headLen}
			if len(a.head) > 0 {
				if err := q.firstPositions(a.head, first); err != nil {
					return nil, nil, nil, fmt.Errorf("head of entity %s: %w", a.id, err)
				}
				start := len(hpos)
				hpos = q.SlotFirsts(first, hpos)
				hf.pos = hpos[start:len(hpos):len(hpos)]
			}
			heads[e] = int32(len(hfs))
			hfs = append(hfs, hf)
		}
		start := len(tfs)
		tfs = q.Features(&docs[k], tfs)
		fs[k] = features{length: ks.length[s], tf: tfs[start:len(tfs):len(tfs)], head: hf}
	}
	return masks, ranks, fs, nil
}

// features are a chunk's ranking-v2 features (postgram.KeywordHit).
type features struct {
	length int32
	tf     []uint16
	head   headFeatures
}

// headFeatures are an entity's ranking-v2 features.
type headFeatures struct {
	pos  []uint16
	len  int32
	typ  driver.EntityType
	tags []string
}

func (f *features) set(h *driver.KeywordHit) {
	h.Length, h.TF = f.length, f.tf
	h.HeadPos, h.HeadLen, h.Type, h.Tags = f.head.pos, f.head.len, f.head.typ, f.head.tags
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
	for i := range q.Of {
		n := 0
		for _, s := range ks.termMatching(q, i) {
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
func (ix *index) chunkTexts(ws string, rids []int64, f *driver.EntityFilter) map[int64]chunkRow {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make(map[int64]chunkRow, len(rids))
	sp := ix.spaces[ws]
	if sp == nil || sp.kw == nil {
		return out
	}
	ks := sp.kw
	match := f.Matcher()
	for _, rid := range rids {
		s, ok := ks.slot[rid]
		if !ok {
			continue
		}
		e := &sp.ents[ks.ent[s]]
		if !admits(match, e) {
			continue
		}
		out[rid] = chunkRow{entity: e.id, content: ks.content[s], updated: fromMicros(e.UpdatedAt)}
	}
	return out
}

// keywordProbe runs a probe (see Store.KeywordProbe) over the terms in use,
// which all have lexemes. It returns the hits and their chunk rids.
func (ix *index) keywordProbe(ws string, q *driver.KeywordQuery, t *terms, use []int, holds func(uint32) bool) ([]driver.KeywordHit, []int64, error) {
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
	// The chunks, in the probe's order; scored afterwards.
	var slots []int32
	usable := func(s int32) bool { return v.ok(s) && !exclude[s] }
	take := func(s int32) bool {
		if usable(s) {
			slots = append(slots, s)
		}
		return len(slots) < q.Limit
	}
	switch {
	case len(q.Only) > 0:
		// The listed chunks, each once, in the order given; the probe is
		// checked on their scores below, and the limit applies to those
		// that pass.
		seen := make(map[int32]bool, len(q.Only))
		for _, id := range q.Only {
			s, ok := v.ks.byChunk[id]
			if !ok || seen[s] {
				continue
			}
			seen[s] = true
			if usable(s) {
				slots = append(slots, s)
			}
		}
	case q.Mode == driver.ProbeAny:
		lists := make([][]int32, 0, len(use))
		for _, i := range use {
			if m := v.ks.termMatching(t, i); len(m) > 0 {
				lists = append(lists, m)
			}
		}
		union(lists, take)
	default: // ProbeAll over the terms in use, or ProbeTerm's one term
		for _, s := range v.ks.conjunction(t, use) {
			if !take(s) {
				break
			}
		}
	}
	scored := len(q.Only) > 0 || !q.Bare
	var masks []uint32
	var ranks []float32
	var fs []features
	if scored {
		var err error
		if masks, ranks, fs, err = v.score(slots, t, q.Features && !q.Bare); err != nil {
			return nil, nil, err
		}
	}
	hits := make([]driver.KeywordHit, 0, len(slots))
	rids := make([]int64, 0, len(slots))
	for k, s := range slots {
		if len(hits) >= q.Limit {
			break
		}
		if len(q.Only) > 0 && !holds(masks[k]) {
			continue
		}
		h := v.hit(s, q.Bare)
		if !q.Bare {
			h.Matched, h.Rank = masks[k], float64(ranks[k])
			if fs != nil {
				fs[k].set(&h)
			}
		}
		hits = append(hits, h)
		rids = append(rids, v.ks.rid[s])
	}
	if len(hits) == 0 {
		hits, rids = nil, nil
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
func (ix *index) keywordFill(ws string, q *driver.KeywordFillQuery, t *terms) (driver.KeywordFillResult, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var res driver.KeywordFillResult
	if !ix.loaded {
		return res, errNotMigrated
	}
	v, ok := ix.view(ws, &q.Filter)
	if !ok {
		return res, nil
	}
	pool := make([]int32, 0, q.Limit)
	seen := make(map[int32]bool, q.Limit)
	step := func(slots []int32) {
		for _, s := range slots {
			if len(pool) >= q.Limit {
				return
			}
			if !seen[s] && v.ok(s) {
				seen[s] = true
				pool = append(pool, s)
			}
		}
	}
	if use := t.withLexemes(); len(use) > 0 {
		step(v.ks.conjunction(t, use))
	}
	res.Conjunction = len(pool)
	if q.Heads > 0 {
		v.headStep(t, q.HeadTerms, q.Heads, &pool, seen, q.Limit)
	}
	for _, i := range q.Order {
		if len(pool) >= q.Limit || len(q.Terms) == 1 {
			break // one term's step is the conjunction
		}
		step(v.ks.termMatching(t, i))
	}
	masks, ranks, fs, err := v.score(pool, t, q.Features)
	if err != nil {
		return driver.KeywordFillResult{}, err
	}
	res.Hits = make([]driver.KeywordHit, len(pool))
	for k, s := range pool {
		h := v.hit(s, false)
		h.Matched, h.Rank = masks[k], float64(ranks[k])
		if fs != nil {
			fs[k].set(&h)
		}
		res.Hits[k] = h
	}
	if len(res.Hits) == 0 {
		res.Hits = nil
	}
	return res, nil
}

// lexemeStats reads ws's corpus statistics (see Store.LexemeStats).
func (ix *index) lexemeStats(ws string, lexemes []string) driver.LexemeStats {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	st := driver.LexemeStats{DF: make(map[string]int64)}
	sp := ix.spaces[ws]
	if sp == nil || sp.kw == nil {
		return st
	}
	ks := sp.kw
	st.Chunks, st.Length = int64(ks.nlive), ks.totalLen
	for _, l := range lexemes {
		if p := ks.post[l]; p != nil && p.live > 0 {
			st.DF[l] = int64(p.live)
		}
	}
	return st
}

// headMatching returns the ascending slots of the entities whose head
// matches term i: holds all of its lexemes, or any one of its
// alternatives.
func (sp *space) headMatching(q *terms, i int) []int32 {
	var out []int32
	if own := q.Of[i]; len(own) > 0 {
		count := map[int32]int{}
		for _, l := range own {
			for _, e := range sp.heads[q.Lexemes[l]] {
				count[e]++
			}
		}
		for e, n := range count {
			if n == len(own) {
				out = append(out, e)
			}
		}
	}
	for _, l := range q.Alt[i] {
		out = append(out, sp.heads[q.Lexemes[l]]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// headStep adds to the pool, for each term in order, the first usable
// chunk of each admitted entity whose head matches it and that has no
// chunk in the pool yet, until max entities were added or the pool is
// full (see postgram.KeywordFillQuery.Heads).
func (v *kwView) headStep(q *terms, order []int, max int, pool *[]int32, seen map[int32]bool, limit int) {
	if len(v.sp.heads) == 0 {
		return
	}
	have := make(map[int32]bool, len(*pool))
	for _, s := range *pool {
		have[v.ks.ent[s]] = true
	}
	added := 0
	for _, i := range order {
		for _, e := range v.sp.headMatching(q, i) {
			if added >= max || len(*pool) >= limit {
				return
			}
			if have[e] || int(e) >= len(v.admit) || !v.admit[e] {
				continue
			}
			for _, s := range v.ks.byEnt[e] {
				if v.ok(s) && !seen[s] {
					seen[s] = true
					*pool = append(*pool, s)
					have[e] = true
					added++
					break
				}
			}
		}
	}
}
