package kwindex

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
)

// Plan checks a probe's terms and mode and returns the terms the probe
// walks (those with lexemes) and the test of a chunk's term mask it
// implies. With no term to walk, or no room (Limit ≤ 0), the probe finds
// nothing: an empty tsquery matches nothing.
func Plan(q *driver.KeywordQuery, t *Terms) (use []int, holds func(mask uint32) bool, err error) {
	if len(q.Terms) == 0 || len(q.Terms) > 32 {
		return nil, nil, fmt.Errorf("keyword probe: need 1 to 32 terms, got %d", len(q.Terms))
	}
	switch q.Mode {
	case driver.ProbeAll, driver.ProbeAny:
		use = t.WithLexemes()
		var need uint32
		for _, i := range use {
			need |= 1 << i
		}
		if q.Mode == driver.ProbeAll {
			holds = func(m uint32) bool { return m&need == need }
		} else {
			holds = func(m uint32) bool { return m != 0 }
		}
	case driver.ProbeTerm:
		if q.Term < 0 || q.Term >= len(q.Terms) {
			return nil, nil, fmt.Errorf("keyword probe: term %d out of range", q.Term)
		}
		if len(t.Of[q.Term]) > 0 {
			use = []int{q.Term}
		}
		bit := uint32(1) << q.Term
		holds = func(m uint32) bool { return m&bit != 0 }
	default:
		return nil, nil, fmt.Errorf("keyword probe: unknown mode %d", q.Mode)
	}
	return use, holds, nil
}

// CheckFill checks a fill's terms, limit and term order.
func CheckFill(q *driver.KeywordFillQuery) error {
	if len(q.Terms) == 0 || len(q.Terms) > 32 {
		return fmt.Errorf("keyword fill: need 1 to 32 terms, got %d", len(q.Terms))
	}
	if q.Limit <= 0 {
		return fmt.Errorf("keyword fill: limit %d", q.Limit)
	}
	for _, t := range q.Order {
		if t < 0 || t >= len(q.Terms) {
			return fmt.Errorf("keyword fill: term %d out of range", t)
		}
	}
	for _, t := range q.HeadTerms {
		if t < 0 || t >= len(q.Terms) {
			return fmt.Errorf("keyword fill: head term %d out of range", t)
		}
	}
	return nil
}

// Entity is what the keyword index reads of an entity: its id, the
// attributes filters and ranking v2 read, and its head (the name fields
// ranking v2 weighs) as an encoded tsvector.
type Entity struct {
	ID uuid.UUID
	driver.FilterView
	Head    []byte // encoded (Encode); nil when the entity has none
	HeadLen int32  // the head's positions (Length)
}

// View is a workspace's keyword state as one search reads it: the store
// holds its lock for reading while the View is used.
type View struct {
	Set   *Set
	Heads Heads
	// Admit tells, by entity slot, whether the search's filter admits the
	// entity (a dead slot is never admitted).
	Admit []bool
	// Ent returns the entity in a slot.
	Ent func(slot int32) *Entity
}

// ok reports whether slot s is a live chunk the filter admits.
func (v *View) ok(s int32) bool {
	e := v.Set.ent[s]
	return v.Set.live[s] && int(e) < len(v.Admit) && v.Admit[e]
}

// hit returns slot s's hit without scores (ids, and unless bare its
// content and update time).
func (v *View) hit(s int32, bare bool) driver.KeywordHit {
	e := v.Ent(v.Set.ent[s])
	h := driver.KeywordHit{ChunkID: v.Set.chunk[s], EntityID: e.ID}
	if !bare {
		h.Content, h.UpdatedAt = v.Set.content[s], time.UnixMicro(e.UpdatedAt).UTC()
	}
	return h
}

// score returns each slot's term mask and rank against q, and with feats
// its ranking-v2 features (see postgram.KeywordHit). It reads the positions
// through the query lexemes' posting lists, walking each list once over the
// slots in ascending order (galloping), so a chunk's tsvector is only
// touched where its positions are.
func (v *View) score(slots []int32, q *Terms, feats bool) ([]uint32, []float32, []features, error) {
	ks, n := v.Set, len(q.Lexemes)
	present := make([]bool, len(slots)*n)
	posv := make([][]uint16, len(slots)*n)
	docs := make([]DocTerms, len(slots))
	for k := range docs {
		docs[k] = DocTerms{Present: present[k*n : (k+1)*n : (k+1)*n], Pos: posv[k*n : (k+1)*n : (k+1)*n]}
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
				return nil, nil, nil, fmt.Errorf("chunk %s: %w", ks.chunk[s], ErrBadTSV)
			}
			rest = rest[m:]
			pl, m := binary.Uvarint(rest)
			if m <= 0 || uint64(len(rest)-m) < pl {
				return nil, nil, nil, fmt.Errorf("chunk %s: %w", ks.chunk[s], ErrBadTSV)
			}
			start := len(arena)
			arena = DecodePositions(int(np), rest[m:m+int(pl)], arena)
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
			if err := q.Scan(ks.tsv[s], &docs[k]); err != nil {
				return nil, nil, nil, fmt.Errorf("chunk %s: %w", ks.chunk[s], err)
			}
		}
		masks[k] = q.Mask(&docs[k])
		if !feats {
			ranks[k] = q.RankCD(&docs[k])
			continue
		}
		e := ks.ent[s]
		var hf headFeatures
		if at, ok := heads[e]; ok {
			hf = hfs[at]
		} else {
			a := v.Ent(e)
			hf = headFeatures{typ: a.Type, tags: a.Tags, len: a.HeadLen}
			if len(a.Head) > 0 {
				if err := q.FirstPositions(a.Head, first); err != nil {
					return nil, nil, nil, fmt.Errorf("head of entity %s: %w", a.ID, err)
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

// TermCounts counts the live chunks holding every lexeme of each term (or
// one of its alternatives), up to limit (0 for a term without lexemes),
// and the set's live chunks. A nil set holds none.
func (ks *Set) TermCounts(q *Terms, limit int) ([]int, int) {
	counts := make([]int, len(q.Of))
	if ks == nil {
		return counts, 0
	}
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

// Probe runs a keyword probe (see driver.KeywordQuery) over the terms in
// use, which all have lexemes (see Plan). It returns the hits and their
// chunks' rids (without similarities: the store adds them).
func (v *View) Probe(q *driver.KeywordQuery, t *Terms, use []int, holds func(uint32) bool) ([]driver.KeywordHit, []int64, error) {
	if v.Set == nil || v.Set.nlive == 0 {
		return nil, nil, nil
	}
	var exclude map[int32]bool
	if len(q.Exclude) > 0 {
		exclude = make(map[int32]bool, len(q.Exclude))
		for _, id := range q.Exclude {
			if s, ok := v.Set.byChunk[id]; ok {
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
			s, ok := v.Set.byChunk[id]
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
			if m := v.Set.termMatching(t, i); len(m) > 0 {
				lists = append(lists, m)
			}
		}
		union(lists, take)
	default: // ProbeAll over the terms in use, or ProbeTerm's one term
		for _, s := range v.Set.conjunction(t, use) {
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
		rids = append(rids, v.Set.rid[s])
	}
	if len(hits) == 0 {
		hits, rids = nil, nil
	}
	return hits, rids, nil
}

// lexemesOf returns the distinct query lexemes of the given terms.
func lexemesOf(t *Terms, use []int) []int {
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

// Fill builds a keyword pool (see driver.KeywordFillQuery): each step
// walks the chunks matching its term in slot order and stops as soon as
// the pool is full, skipping chunks already in it. The query is checked
// by CheckFill.
func (v *View) Fill(q *driver.KeywordFillQuery, t *Terms) (driver.KeywordFillResult, error) {
	var res driver.KeywordFillResult
	if v.Set == nil || v.Set.nlive == 0 {
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
	if use := t.WithLexemes(); len(use) > 0 {
		step(v.Set.conjunction(t, use))
	}
	res.Conjunction = len(pool)
	if q.Heads > 0 {
		v.headStep(t, q.HeadTerms, q.Heads, &pool, seen, q.Limit)
	}
	for _, i := range q.Order {
		if len(pool) >= q.Limit || len(q.Terms) == 1 {
			break // one term's step is the conjunction
		}
		step(v.Set.termMatching(t, i))
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

// Stats returns the set's corpus statistics (see driver.LexemeStats): live
// chunks, their total length and each lexeme's live posting count. A nil
// set holds none.
func (ks *Set) Stats(lexemes []string) driver.LexemeStats {
	st := driver.LexemeStats{DF: make(map[string]int64)}
	if ks == nil {
		return st
	}
	st.Chunks, st.Length = int64(ks.nlive), ks.totalLen
	for _, l := range lexemes {
		if p := ks.post[l]; p != nil && p.live > 0 {
			st.DF[l] = int64(p.live)
		}
	}
	return st
}

// Heads maps a lexeme to the slots of the entities whose head holds it.
type Heads map[string][]int32

// Index moves an entity's entries from the lexemes of its old head to
// those of its new one (both encoded; nil for none), and returns the map
// (allocated on first use).
func (h Heads) Index(slot int32, old, new []byte) Heads {
	if bytes.Equal(old, new) {
		return h
	}
	_ = Walk(old, func(word []byte, _ int, _ []byte) {
		l := h[string(word)]
		if i := slices.Index(l, slot); i >= 0 {
			l = slices.Delete(l, i, i+1)
		}
		if len(l) == 0 {
			delete(h, string(word))
		} else {
			h[string(word)] = l
		}
	})
	if len(new) == 0 {
		return h
	}
	if h == nil {
		h = Heads{}
	}
	_ = Walk(new, func(word []byte, _ int, _ []byte) {
		h[string(word)] = append(h[string(word)], slot)
	})
	return h
}

// matching returns the ascending slots of the entities whose head matches
// term i: holds all of its lexemes, or any one of its alternatives.
func (h Heads) matching(q *Terms, i int) []int32 {
	var out []int32
	if own := q.Of[i]; len(own) > 0 {
		count := map[int32]int{}
		for _, l := range own {
			for _, e := range h[q.Lexemes[l]] {
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
		out = append(out, h[q.Lexemes[l]]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// headStep adds to the pool, for each term in order, the first usable
// chunk of each admitted entity whose head matches it and that has no
// chunk in the pool yet, until max entities were added or the pool is
// full (see postgram.KeywordFillQuery.Heads).
func (v *View) headStep(q *Terms, order []int, max int, pool *[]int32, seen map[int32]bool, limit int) {
	if len(v.Heads) == 0 {
		return
	}
	have := make(map[int32]bool, len(*pool))
	for _, s := range *pool {
		have[v.Set.ent[s]] = true
	}
	added := 0
	for _, i := range order {
		for _, e := range v.Heads.matching(q, i) {
			if added >= max || len(*pool) >= limit {
				return
			}
			if have[e] || int(e) >= len(v.Admit) || !v.Admit[e] {
				continue
			}
			for _, s := range v.Set.byEnt[e] {
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
