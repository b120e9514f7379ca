package rank

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/internal/fusion"
)

// Params are ranking v2's weights. DefaultParams holds the values chosen
// on the development part of the quality benchmark.
type Params struct {
	K1 float64 // BM25 term-frequency saturation
	B  float64 // BM25 length normalisation
	// InflectionWeight and TypoWeight scale a term matched by an
	// alternative instead of its own lexemes.
	InflectionWeight float64
	TypoWeight       float64
	// HeadWeight scales a term's IDF when the entity's head (its name, see
	// Head) holds it, in full for a head of at most HeadLead positions and
	// by HeadLead/n for a longer head of n positions.
	HeadWeight float64
	HeadLead   float64
	// HeadStart: a term at one of the head's first HeadStart positions
	// counts in full whatever the head's length.
	HeadStart float64
	// TagWeight and TypeWeight scale a term's IDF when one of the entity's
	// tags, or its type, is the term.
	TagWeight  float64
	TypeWeight float64
	// MoreChunks scales the evidence of an entity's chunks beyond its best.
	MoreChunks float64
	// VectorWeight is the vector branch's share of the fused score when
	// the keyword branch's best result matches the whole query; the share
	// grows to 1 as that result's coverage c falls: w + (1 − w)(1 − c)².
	VectorWeight float64
	// Coverage is the share of the query's IDF mass an entity must match
	// to be eligible by keywords (beside the seed's rules).
	Coverage float64
	// CoverageBoost raises the share of the query's IDF mass an entity
	// matches to this power and scales its keyword evidence by it, so an
	// entity matching every term outranks one matching the rarest alone.
	CoverageBoost float64
	// TypoMaxDF: a term held by at most this many chunks is expanded to
	// typo candidates.
	TypoMaxDF int64
	// MaxInflections and MaxTypos bound a term's alternatives.
	MaxInflections int
	MaxTypos       int
	// HeadCandidates is how many entities whose head alone matches a term
	// join the keyword pool.
	HeadCandidates int
}

// DefaultParams returns the tuned defaults.
func DefaultParams() Params {
	return Params{
		K1: 1.2, B: 0.3,
		InflectionWeight: 0.8, TypoWeight: 0.7,
		HeadWeight: 3, HeadLead: 3, HeadStart: 1, TagWeight: 0.25, TypeWeight: 0.5, MoreChunks: 0.1,
		VectorWeight: 0.15, Coverage: 0.5, CoverageBoost: 2,
		TypoMaxDF: 0, MaxInflections: 6, MaxTypos: 3, HeadCandidates: 20,
	}
}

// termScores sets out, per term, to the best BM25 contribution among the
// term's slots for a chunk (tf per slot, length in positions), and slot to
// the slot that gave it.
func (pl *Plan) termScores(tf []uint16, length int32, out []float64, slot []int32) {
	p := &pl.Params
	norm := 1.0
	if pl.AvgLen > 0 {
		norm = 1 - p.B + p.B*float64(length)/pl.AvgLen
	}
	for k := range pl.Slots {
		if k >= len(tf) || tf[k] == 0 {
			continue
		}
		s := &pl.Slots[k]
		f := float64(tf[k])
		v := pl.weight(s) * s.IDF * f * (p.K1 + 1) / (f + p.K1*norm)
		if v > out[s.Term] {
			out[s.Term], slot[s.Term] = v, int32(k)
		}
	}
}

// ChunkScore is a chunk's BM25 against the plan (the sum over terms of
// their best slot's contribution): ranking v2's keyword order of chunks.
func (pl *Plan) ChunkScore(tf []uint16, length int32) float64 {
	var buf [8]float64
	var sbuf [8]int32
	out, slot := buf[:0], sbuf[:0]
	if n := len(pl.Terms); n <= len(buf) {
		out, slot = buf[:n], sbuf[:n]
	} else {
		out, slot = make([]float64, n), make([]int32, n)
	}
	pl.termScores(tf, length, out, slot)
	s := 0.0
	for _, v := range out {
		s += v
	}
	return s
}

// fieldScores sets, per term, the best weighted IDF among the term's slots
// that the entity's name fields hold: its head (scaled by the head's
// length), its tags and its type; and the slot and field that gave it.
func (pl *Plan) fieldScores(f *fusion.Features, tagLexemes func(string) []string, out []float64, slot []int32, where []field) {
	p := &pl.Params
	head := 1.0
	if n := float64(f.HeadLen); n > p.HeadLead {
		head = p.HeadLead / n
	}
	note := func(k int, w float64, in field) {
		s := &pl.Slots[k]
		if v := pl.weight(s) * s.IDF * w; v > out[s.Term] {
			out[s.Term], slot[s.Term], where[s.Term] = v, int32(k), in
		}
	}
	for k := range pl.Slots {
		if k < len(f.HeadPos) && f.HeadPos[k] > 0 {
			w := head
			if float64(f.HeadPos[k]) <= p.HeadStart {
				w = 1 // the head starts with it
			}
			note(k, p.HeadWeight*w, inHead)
		}
	}
	if f.Type != "" {
		for _, k := range pl.byLexeme[f.Type] {
			note(int(k), p.TypeWeight, inType)
		}
	}
	for _, t := range f.Tags {
		words := tagLexemes(t)
		for _, w := range words {
			for _, k := range pl.byLexeme[w] {
				note(int(k), p.TagWeight, inTag)
			}
		}
		for _, k := range pl.compound {
			if pl.slotIn(int(k), words) {
				note(int(k), p.TagWeight, inTag)
			}
		}
	}
}

// slotIn reports whether a slot's lexemes are all among lexemes.
func (pl *Plan) slotIn(k int, lexemes []string) bool {
	s := &pl.Slots[k]
	if s.Kind != Exact {
		return slices.Contains(lexemes, s.Lexeme)
	}
	own := pl.Lexemes[s.Term]
	if len(own) == 0 {
		return false
	}
	for _, l := range own {
		if !slices.Contains(lexemes, l) {
			return false
		}
	}
	return true
}

// termIDF returns a term's weight in the coverage rule: its exact IDF when
// it occurs, else its best alternative's weighted IDF.
func (pl *Plan) termIDF(i int) float64 {
	if pl.Slots[i].DF > 0 {
		return pl.Slots[i].IDF
	}
	best := 0.0
	for k := len(pl.Terms); k < len(pl.Slots); k++ {
		if s := &pl.Slots[k]; s.Term == i {
			best = max(best, pl.weight(s)*s.IDF)
		}
	}
	if best == 0 {
		// Only in heads (names in metadata, which no chunk holds).
		return pl.Slots[i].IDF
	}
	return best
}

// Components explain one fused result.
type Components struct {
	Body         float64 // the best chunk's BM25
	MoreChunks   float64 // the other chunks' BM25, scaled
	Head         float64 // head (name field) matches, scaled
	Keyword      float64 // Body + MoreChunks + Head
	KeywordShare float64 // Keyword relative to the best result's, 0..1
	Vector       float64 // similarity relative to the vector list, 0..1
	Coverage     float64 // share of the query's IDF mass matched
	Chunks       int     // keyword-pool chunks of the entity
	// VectorWeight is the vector branch's weight in this search: higher
	// when the keyword branch's best result covers less of the query.
	VectorWeight float64
}

// Result is a fused entity with its explanation.
type Result struct {
	fusion.Result
	Why     Components
	showing int     // the candidate shown
	ent     *entity // for Matched
}

// Matched lists, per term, how it matched the result ("" when it did not):
// the lexeme found and its kind, and where when only a name field (head,
// tag, type) holds it. Built on demand: only explanations need it.
func (r *Result) Matched(pl *Plan) []string {
	e := r.ent
	out := make([]string, len(pl.Terms))
	for i := range out {
		switch {
		case e.terms[i] > 0:
			s := &pl.Slots[e.termSlot[i]]
			out[i] = s.Lexeme + " (" + s.Kind.String() + ")"
			if e.head[i] > 0 {
				out[i] += " +" + e.field[i].String()
			}
		case e.head[i] > 0:
			s := &pl.Slots[e.headSlot[i]]
			out[i] = s.Lexeme + " (" + s.Kind.String() + ", " + e.field[i].String() + " only)"
		}
	}
	return out
}

// field is a name field (see fieldScores).
type field uint8

const (
	inHead field = iota + 1
	inTag
	inType
)

func (f field) String() string {
	switch f {
	case inHead:
		return "head"
	case inTag:
		return "tag"
	case inType:
		return "type"
	}
	return ""
}

// entity accumulates one entity's candidates.
type entity struct {
	id       uuid.UUID
	cands    []int
	terms    []float64 // per term, best body contribution
	head     []float64 // per term, head contribution
	termSlot []int32   // per term, the slot of terms[i]
	headSlot []int32   // per term, the slot of head[i]
	field    []field   // per term, the field of head[i]
	body     float64   // best chunk
	bodySum  float64
	bestKW   int // candidate of the best chunk (-1: none)
	sim      float64
	hasSim   bool
	fielded  bool // fieldScores ran (for its first chunk with features)
	bestVec  int
	coverage float64
	score    float64
	kwRank   int
	comp     Components
}

// Scoring is a search's candidates scored by ranking v2. Scores depend
// on the keyword features and the vector branch's similarities, never on
// the similarities still pending, so a Scoring stays valid while those are
// fetched (Unsettled) and is computed once per search.
type Scoring struct {
	pl    *Plan
	cands []fusion.Candidate
	fp    fusion.Params
	buf   *buffers
	ents  []*entity
	res   []Result // per entity
	order []int    // entities, best first
}

// buffers are a Scoring's arrays, kept for the next search once the
// Scoring is released: a search scores a few hundred entities, and
// allocating their arrays anew each time was a fifth of a search's bytes.
type buffers struct {
	store  []entity
	floats []float64
	ints   []int32
	fields []field
	ents   []*entity
	byKW   []*entity
	res    []Result
	order  []int
	first  map[uuid.UUID]int32
}

var bufferPool = sync.Pool{New: func() any { return &buffers{first: map[uuid.UUID]int32{}} }}

// sized returns s with length n, zeroed, reusing its array when it holds n.
func sized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// Score scores the candidates. cands is kept: Fuse and Unsettled read the
// similarities the caller fills in meanwhile. Release the Scoring when
// done with it and with the results Fuse returned.
func Score(pl *Plan, cands []fusion.Candidate, fp fusion.Params) *Scoring {
	b := bufferPool.Get().(*buffers)
	s := &Scoring{pl: pl, cands: cands, fp: fp, buf: b, ents: pl.entities(b, cands)}
	b.res = sized(b.res, len(s.ents))
	b.order = sized(b.order, len(s.ents))
	s.res, s.order = b.res, b.order
	for i, e := range s.ents {
		s.res[i] = pl.result(e, cands, fp)
		s.order[i] = i
	}
	slices.SortFunc(s.order, func(a, b int) int { return cmpResult(&s.res[a].Result, &s.res[b].Result) })
	return s
}

// Release hands the Scoring's arrays to the next search. Neither the
// Scoring nor the results its Fuse returned may be used afterwards.
func (s *Scoring) Release() {
	if s.buf == nil {
		return
	}
	clear(s.buf.ents) // drop the pointers into store
	clear(s.buf.byKW)
	clear(s.buf.res)
	bufferPool.Put(s.buf)
	*s = Scoring{}
}

// Fuse returns one result per eligible entity, best first. An entity is
// eligible when one of its chunks passes the seed's gate (fusion.Eligible)
// or its chunks and name fields together match at least Params.Coverage of
// the query's IDF mass; a candidate whose similarity is pending counts as
// having none (see Unsettled). The score is (1 − VectorWeight) × the
// entity's keyword evidence relative to the best entity's + VectorWeight ×
// its best chunk's similarity relative to the vector list's range; recency
// multiplies it as in the seed ranking. Ties: the better keyword rank,
// vector rank, then entity id. It returns the first limit results (every
// one when limit ≤ 0).
func (s *Scoring) Fuse(limit int) []Result {
	if limit <= 0 || limit > len(s.order) {
		limit = len(s.order)
	}
	out := make([]Result, 0, limit)
	for _, i := range s.order {
		if len(out) == limit {
			break
		}
		if s.pl.eligible(s.ents[i], s.cands, s.fp) {
			r := s.res[i]
			if c := s.cands[r.showing]; c.SimilarityPending != r.SimilarityPending || c.Similarity != r.Similarity {
				r.Similarity, r.SimilarityPending = c.Similarity, c.SimilarityPending
			}
			out = append(out, r)
		}
	}
	return out
}

// Unsettled returns the candidates whose pending similarity decides which
// entities make the first limit results: walking entities in score order
// (which similarity does not change), an entity not yet eligible without
// its pending similarities needs them. See fusion.Unsettled.
func (s *Scoring) Unsettled(limit int) []int {
	pending := false
	for i := range s.cands {
		pending = pending || s.cands[i].SimilarityPending
	}
	if !pending || limit <= 0 {
		return nil
	}
	var need []int
	taken := 0
	for _, i := range s.order {
		if taken >= limit {
			break
		}
		e := s.ents[i]
		if s.pl.eligible(e, s.cands, s.fp) {
			taken++
			continue
		}
		var waiting []int
		for _, c := range e.cands {
			if s.cands[c].SimilarityPending {
				waiting = append(waiting, c)
			}
		}
		if len(waiting) > 0 {
			need = append(need, waiting...)
			taken++ // assumed eligible until known
		}
	}
	return need
}

// entities groups candidates by entity and scores their keyword evidence
// (normalisation across entities is left to result).
func (pl *Plan) entities(b *buffers, cands []fusion.Candidate) []*entity {
	n := len(pl.Terms)
	// Count the entities first, so their arrays come from one array each
	// (b's, reused across searches): a search scores up to a few hundred
	// candidates.
	first := b.first
	clear(first)
	for i := range cands {
		if _, ok := first[cands[i].EntityID]; !ok {
			first[cands[i].EntityID] = int32(len(first))
		}
	}
	m := len(first)
	// Each entity's candidate list keeps its array from an earlier search.
	if cap(b.store) < m {
		b.store = append(b.store[:cap(b.store)], make([]entity, m-cap(b.store))...)
	}
	b.store = b.store[:m]
	for i := range b.store {
		b.store[i] = entity{cands: b.store[i].cands[:0]}
	}
	b.floats = sized(b.floats, 2*n*m)
	b.ints = sized(b.ints, 2*n*m)
	b.fields = sized(b.fields, n*m)
	if cap(b.ents) < m {
		b.ents = make([]*entity, 0, m)
	}
	var (
		store, floats, ints, fields = b.store, b.floats, b.ints, b.fields
		ents                        = b.ents[:0]
	)
	carved := store // first[id] indexes it
	carve := func() *entity {
		e := &store[0]
		store = store[1:]
		e.terms, e.head, floats = floats[:n:n], floats[n:2*n:2*n], floats[2*n:]
		e.termSlot, e.headSlot, ints = ints[:n:n], ints[n:2*n:2*n], ints[2*n:]
		e.field, fields = fields[:n:n], fields[n:]
		e.bestKW, e.bestVec = -1, -1
		return e
	}
	chunk, chunkSlot := make([]float64, n), make([]int32, n)
	tagLex := map[string][]string{}
	tagLexemes := func(t string) []string {
		ls, ok := tagLex[t]
		if !ok {
			ls = tagWords(t)
			tagLex[t] = ls
		}
		return ls
	}
	for ci := range cands {
		c := &cands[ci]
		e := &carved[first[c.EntityID]]
		if len(e.cands) == 0 {
			// Not met yet (each met entity holds a candidate): entities
			// are met in the order first numbered them, so carve it.
			e = carve()
			e.id = c.EntityID
			ents = append(ents, e)
		}
		e.cands = append(e.cands, ci)
		if c.VectorRank > 0 && c.Similarity != nil && (!e.hasSim || *c.Similarity > e.sim) {
			e.sim, e.hasSim, e.bestVec = *c.Similarity, true, ci
		}
		f := c.Features
		if f == nil {
			continue
		}
		clear(chunk)
		pl.termScores(f.TF, f.Length, chunk, chunkSlot)
		sc := 0.0
		for i, v := range chunk {
			sc += v
			if v > e.terms[i] {
				e.terms[i], e.termSlot[i] = v, chunkSlot[i]
			}
		}
		e.bodySum += sc
		if e.bestKW < 0 || sc > e.body {
			e.body, e.bestKW = sc, ci
		}
		if !e.fielded {
			// The name fields, tags and type are the entity's: the same
			// for each of its chunks.
			e.fielded = true
			pl.fieldScores(f, tagLexemes, e.head, e.headSlot, e.field)
		}
	}
	p := &pl.Params
	// A term counts when some chunk holds it, or some candidate's head
	// does (a name only in metadata is in no chunk).
	present := slices.Clone(pl.Present)
	for i := range n {
		for _, e := range ents {
			if present[i] {
				break
			}
			present[i] = e.head[i] > 0
		}
	}
	var total float64
	for i := range n {
		if present[i] {
			total += pl.termIDF(i)
		}
	}
	for _, e := range ents {
		var head, covered float64
		for i := range n {
			head += e.head[i]
			if present[i] && (e.terms[i] > 0 || e.head[i] > 0) {
				covered += pl.termIDF(i)
			}
		}
		e.comp = Components{Body: e.body, MoreChunks: p.MoreChunks * (e.bodySum - e.body), Head: head}
		if total > 0 {
			e.coverage = covered / total
		}
		e.comp.Keyword = (e.comp.Body + e.comp.MoreChunks + e.comp.Head) * math.Pow(e.coverage, p.CoverageBoost)
		e.comp.Coverage = e.coverage
	}
	pl.normalise(ents)
	// Keyword ranks: entities by keyword evidence.
	byKW := append(b.byKW[:0], ents...)
	b.byKW = byKW
	slices.SortStableFunc(byKW, func(a, b *entity) int { return cmp.Compare(b.comp.Keyword, a.comp.Keyword) })
	for i, e := range byKW {
		if e.comp.Keyword > 0 {
			e.kwRank = i + 1
		}
	}
	b.ents = ents
	return ents
}

// normalise sets each entity's fused score.
func (pl *Plan) normalise(ents []*entity) {
	var kwMax, simMax, simMin float64
	first := true
	for _, e := range ents {
		kwMax = max(kwMax, e.comp.Keyword)
		if e.hasSim {
			if first {
				simMax, simMin, first = e.sim, e.sim, false
			}
			simMax, simMin = max(simMax, e.sim), min(simMin, e.sim)
		}
	}
	// The vector branch's weight grows as the keyword branch's best
	// evidence covers less of the query: VectorWeight when some entity
	// matches every term, all of it when none matches any.
	best := 0.0
	for _, e := range ents {
		best = max(best, e.coverage)
	}
	w := pl.Params.VectorWeight + (1-pl.Params.VectorWeight)*(1-best)*(1-best)
	for _, e := range ents {
		e.comp.VectorWeight = w
		if kwMax > 0 {
			e.comp.KeywordShare = e.comp.Keyword / kwMax
		}
		if e.hasSim {
			if simMax > simMin {
				e.comp.Vector = (e.sim - simMin) / (simMax - simMin)
			} else {
				e.comp.Vector = 1
			}
		}
		e.score = (1-w)*e.comp.KeywordShare + w*e.comp.Vector
	}
}

// eligible applies the gate to an entity.
func (pl *Plan) eligible(e *entity, cands []fusion.Candidate, fp fusion.Params) bool {
	if e.coverage >= pl.Params.Coverage && e.coverage > 0 {
		return true
	}
	for _, c := range e.cands {
		if fusion.Eligible(cands[c], fp) {
			return true
		}
	}
	return false
}

// result builds an entity's fused result: the chunk shown is its best
// keyword chunk, else its nearest.
func (pl *Plan) result(e *entity, cands []fusion.Candidate, fp fusion.Params) Result {
	show := e.bestKW
	if show < 0 {
		show = e.bestVec
	}
	if show < 0 {
		show = e.cands[0]
	}
	c := cands[show]
	c.KeywordRank = e.kwRank
	r := Result{Result: fusion.Result{Candidate: c, Score: e.score}, Why: e.comp, showing: show, ent: e}
	r.Adjusted = r.Score * fusion.Recency(c.UpdatedAt, fp.Now, fp.RecencyWeight)
	r.Why.Chunks = 0
	for _, ci := range e.cands {
		if cands[ci].Features != nil {
			r.Why.Chunks++
		}
	}
	return r
}

// cmpResult orders results: adjusted score descending, then keyword rank,
// vector rank (missing last), entity id.
func cmpResult(a, b *fusion.Result) int {
	if a.Adjusted != b.Adjusted {
		if a.Adjusted > b.Adjusted {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(rankKey(a.KeywordRank), rankKey(b.KeywordRank)); c != 0 {
		return c
	}
	if c := cmp.Compare(rankKey(a.VectorRank), rankKey(b.VectorRank)); c != 0 {
		return c
	}
	return bytes.Compare(a.EntityID[:], b.EntityID[:])
}

func rankKey(r int) int {
	if r <= 0 {
		return math.MaxInt
	}
	return r
}

// tagWords returns the words a tag is matched by: the tag lowercased, and
// each run of letters and digits in it ("data-team": data-team, data,
// team), much as the keyword parser splits a compound word, at a fraction
// of its cost (a search looks at the tags of every candidate entity).
func tagWords(tag string) []string {
	low := strings.ToLower(tag)
	out := []string{low}
	for w := range strings.FieldsFuncSeq(low, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if w != low {
			out = append(out, w)
		}
	}
	return out
}
