// Package tsrank ranks and matches documents against a keyword query the
// way PostgreSQL does: ts_rank_cd (a port of calc_rank_cd, PostgreSQL 15,
// default weights, normalization 0) and the per-term match mask, for the
// query the keyword branch uses — the OR of the terms, each the AND of its
// lexemes (plainto_tsquery('simple', term)). Both backends use it: SQLite
// over its stored positions, PostgreSQL over the tsvector it returns, so a
// chunk ranks the same everywhere.
package tsrank

import (
	"math"
	"slices"
)

// Query is a compiled keyword query: each term's lexemes as indexes into
// the distinct lexemes of all terms.
type Query struct {
	Lexemes []string // distinct, in byte order (a tsvector's order)
	Of      [][]int  // per term: its lexemes; empty when it has none
	// Alt holds, per term, alternative lexemes (ranking v2's inflection
	// and typo expansions): a term also matches a document holding any one
	// of them. RankCD ignores them.
	Alt   [][]int
	exact []bool // per lexeme: some term's own
	index map[string]int
}

// Compile builds a query from each term's lexemes.
func Compile(termLexemes [][]string) *Query { return CompileWith(termLexemes, nil) }

// CompileWith builds a query from each term's lexemes and alternatives
// (nil, or one list per term).
func CompileWith(termLexemes, alternatives [][]string) *Query {
	q := &Query{index: map[string]int{}, Of: make([][]int, len(termLexemes)), Alt: make([][]int, len(termLexemes))}
	note := func(l string) {
		if _, ok := q.index[l]; !ok {
			q.index[l] = -1
			q.Lexemes = append(q.Lexemes, l)
		}
	}
	for _, ls := range termLexemes {
		for _, l := range ls {
			note(l)
		}
	}
	for _, ls := range alternatives {
		for _, l := range ls {
			note(l)
		}
	}
	slices.Sort(q.Lexemes)
	for i, l := range q.Lexemes {
		q.index[l] = i
	}
	q.exact = make([]bool, len(q.Lexemes))
	for i, ls := range termLexemes {
		for _, l := range ls {
			q.Of[i] = append(q.Of[i], q.index[l])
			q.exact[q.index[l]] = true
		}
	}
	for i, ls := range alternatives {
		if i < len(q.Alt) {
			for _, l := range ls {
				q.Alt[i] = append(q.Alt[i], q.index[l])
			}
		}
	}
	return q
}

// Slots is the number of feature slots (see Features): one per term, then
// one per alternative.
func (q *Query) Slots() int {
	n := len(q.Of)
	for _, a := range q.Alt {
		n += len(a)
	}
	return n
}

// Features appends to dst, per slot, how often it occurs in d: for each
// term its own lexemes' least occurrence count (0 unless all occur), then
// for each term's alternatives in turn, each one's count.
func (q *Query) Features(d *Doc, dst []uint16) []uint16 {
	for _, ls := range q.Of {
		n := 0
		for j, l := range ls {
			c := 0
			if d.Present[l] {
				c = len(d.Pos[l])
			}
			if j == 0 || c < n {
				n = c
			}
		}
		dst = append(dst, uint16(n))
	}
	for _, ls := range q.Alt {
		for _, l := range ls {
			c := 0
			if d.Present[l] {
				c = len(d.Pos[l])
			}
			dst = append(dst, uint16(c))
		}
	}
	return dst
}

// Lookup returns the index of a lexeme of the query.
func (q *Query) Lookup(lexeme string) (int, bool) {
	i, ok := q.index[lexeme]
	return i, ok
}

// Doc is what one document's tsvector holds of a query's lexemes.
type Doc struct {
	Present []bool     // per query lexeme
	Pos     [][]uint16 // per query lexeme, its positions in ascending order
}

// Reset empties d for a new document of q, reusing its memory.
func (q *Query) Reset(d *Doc) {
	n := len(q.Lexemes)
	if cap(d.Present) < n {
		d.Present = make([]bool, n)
		d.Pos = make([][]uint16, n)
	}
	d.Present = d.Present[:n]
	d.Pos = d.Pos[:n]
	for i := range d.Present {
		d.Present[i] = false
		d.Pos[i] = d.Pos[i][:0]
	}
}

// Mask returns the bitmask of the terms whose lexemes are all present (the
// first 32 terms).
func (q *Query) Mask(d *Doc) uint32 {
	var m uint32
	for i, ls := range q.Of {
		if i >= 32 {
			continue
		}
		if i < len(q.Alt) && q.anyPresent(q.Alt[i], d) {
			m |= 1 << i
			continue
		}
		if len(ls) == 0 {
			continue
		}
		all := true
		for _, l := range ls {
			if !d.Present[l] {
				all = false
				break
			}
		}
		if all {
			m |= 1 << i
		}
	}
	return m
}

// FirstPositions appends to dst, per slot (see Features), where it first
// occurs in d: for each term the earliest first position of its own
// lexemes (0 unless all occur), then each alternative's; 0 when absent.
func (q *Query) FirstPositions(d *Doc, dst []uint16) []uint16 {
	first := make([]uint16, len(q.Lexemes))
	for l := range first {
		if d.Present[l] && len(d.Pos[l]) > 0 {
			first[l] = d.Pos[l][0]
		}
	}
	return q.SlotFirsts(first, dst)
}

// SlotFirsts is FirstPositions from each query lexeme's first position in
// a document (first[l], 0 when absent).
func (q *Query) SlotFirsts(first []uint16, dst []uint16) []uint16 {
	for _, ls := range q.Of {
		var p uint16
		for _, l := range ls {
			f := first[l]
			if f == 0 {
				p = 0
				break
			}
			if p == 0 || f < p {
				p = f
			}
		}
		dst = append(dst, p)
	}
	for _, ls := range q.Alt {
		for _, l := range ls {
			dst = append(dst, first[l])
		}
	}
	return dst
}

func (q *Query) anyPresent(ls []int, d *Doc) bool {
	for _, l := range ls {
		if d.Present[l] {
			return true
		}
	}
	return false
}

// invWeightD is 1/w for weight class D, the class of every position
// to_tsvector records: PostgreSQL's default weight 0.1 is a float4 widened
// to double.
var invWeightD = 1.0 / float64(float32(0.1))

// docEntry is one position of a query lexeme in a document (PostgreSQL's
// DocRepresentation).
type docEntry struct {
	pos uint16
	lex int32
}

// RankCD ports PostgreSQL's ts_rank_cd(tsv, query) (calc_rank_cd in
// src/backend/utils/adt/tsrank.c, PostgreSQL 15) with the default weights
// {0.1, 0.2, 0.4, 1.0} and normalization 0, for the query the keyword branch
// ranks with: the OR of every term's plainto_tsquery('simple', term), each
// the AND of the term's lexemes. d holds the positions of the query's
// lexemes in the chunk's tsvector (see Reset and Add). The arithmetic follows PostgreSQL's
// (doubles, in the same order, rounded to float4 at the end), so ranks are
// equal to PostgreSQL's, not only close.
func (q *Query) RankCD(d *Doc) float32 {
	// get_docrep: every position of every query lexeme the document has,
	// sorted by position, then by the lexeme's place in the tsvector (the
	// byte order of q.Lexemes). Duplicate query operands share one entry.
	n := 0
	for l, ok := range d.Present {
		if ok && q.exact[l] {
			n += len(d.Pos[l])
		}
	}
	if n == 0 {
		return 0
	}
	doc := make([]docEntry, 0, n)
	for l, ok := range d.Present {
		if ok && q.exact[l] {
			for _, p := range d.Pos[l] {
				doc = append(doc, docEntry{pos: p, lex: int32(l)})
			}
		}
	}
	slices.SortFunc(doc, func(a, b docEntry) int {
		if a.pos != b.pos {
			return int(a.pos) - int(b.pos)
		}
		return int(a.lex) - int(b.lex)
	})

	exists := make([]bool, len(q.Lexemes))
	var (
		ext                 cover
		wdoc                float64
		sumDist, prevExtPos float64
		nExtent             int
	)
	_ = sumDist // RANK_NORM_EXTDIST only; kept to mirror PostgreSQL
	for q.cover(doc, exists, &ext) {
		invSum := 0.0
		for i := ext.begin; i <= ext.end; i++ {
			invSum += invWeightD
		}
		cpos := float64(ext.end-ext.begin+1) / invSum
		// When a document is long, positions saturate at 16383 and ext.q
		// may equal ext.p: PostgreSQL then counts half the cover as noise.
		nNoise := (ext.q - ext.p) - (ext.end - ext.begin)
		if nNoise < 0 {
			nNoise = (ext.end - ext.begin) / 2
		}
		wdoc += cpos / float64(1+nNoise)
		curExtPos := float64(ext.q+ext.p) / 2.0
		if nExtent > 0 && curExtPos > prevExtPos {
			sumDist += 1.0 / (curExtPos - prevExtPos)
		}
		prevExtPos = curExtPos
		nExtent++
	}
	return float32(wdoc)
}

// cover is PostgreSQL's CoverExt: the search position and the last cover
// found (p and q are positions, begin and end indexes into the document).
type cover struct {
	pos        int
	p, q       int
	begin, end int
}

// holds evaluates the query (OR of ANDs) over the lexemes seen.
func (q *Query) holds(exists []bool) bool {
	for _, ls := range q.Of {
		if len(ls) == 0 {
			continue
		}
		all := true
		for _, l := range ls {
			if !exists[l] {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// cover finds the next cover after ext.pos (PostgreSQL's Cover, with its
// tail recursion as a loop): the shortest stretch of the document, ending
// at the first position where the query holds, that satisfies the query.
func (q *Query) cover(doc []docEntry, exists []bool, ext *cover) bool {
	for {
		clear(exists)
		ext.p, ext.q = math.MaxInt32, 0
		lastpos := ext.pos
		found := false
		// Upper bound: move right until the query holds.
		for i := ext.pos; i < len(doc); i++ {
			exists[doc[i].lex] = true
			if q.holds(exists) {
				if int(doc[i].pos) > ext.q {
					ext.q = int(doc[i].pos)
					ext.end = i
					lastpos = i
					found = true
				}
				break
			}
		}
		if !found {
			return false
		}
		// Lower bound: from there, move left until it holds again.
		clear(exists)
		i := lastpos
		for ; i >= ext.pos; i-- {
			exists[doc[i].lex] = true
			if q.holds(exists) {
				if int(doc[i].pos) < ext.p {
					ext.begin = i
					ext.p = int(doc[i].pos)
				}
				break
			}
		}
		if ext.p <= ext.q {
			// Next try starts after the beginning of this cover.
			ext.pos = i + 1
			return true
		}
		ext.pos++
	}
}
