// Package fusion holds the pure ranking rules of hybrid search: merging the
// vector and keyword candidate lists, the eligibility gate, reciprocal-rank
// fusion, the recency multiplier and the tie-breaks. Every backend feeds it
// the same two ranked lists, so every backend ranks identically.
package fusion

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
)

// K is the reciprocal-rank-fusion constant.
const K = 60

// HalfLife is the recency multiplier's half-life.
const HalfLife = 30 * 24 * time.Hour

// Candidate is one chunk seen by either branch.
type Candidate struct {
	ChunkID  uuid.UUID
	EntityID uuid.UUID
	Content  string
	// VectorRank and KeywordRank are 1-based positions in each branch's
	// ranked list; 0 means the branch did not return the chunk.
	VectorRank  int
	KeywordRank int
	// Similarity is the raw cosine similarity, nil when unknown (no
	// embedding yet, or the vector branch was unavailable).
	Similarity *float64
	// SimilarityPending marks a similarity not fetched yet (see
	// Unsettled); until then the candidate is treated as having none.
	SimilarityPending bool
	// Matched is how many distinct retained query terms the chunk matches.
	Matched int
	// UpdatedAt is the entity's last update, for recency.
	UpdatedAt time.Time
	// Features are the chunk's lexical features for ranking v2 (nil for a
	// chunk outside the keyword pool, and for the seed ranking).
	Features *Features
}

// Features are what ranking v2 reads of a keyword-pool chunk: per feature
// slot of the query (see package rank), how often it occurs in the chunk
// and where it first occurs in its entity's head, and the chunk's length.
type Features struct {
	Length  int32    // lexeme positions in the chunk
	TF      []uint16 // per slot, occurrences in the chunk
	HeadPos []uint16 // per slot, first position in the entity's head (0: absent)
	HeadLen int32    // the head's length in lexeme positions
	Type    string   // the entity's type
	Tags    []string // the entity's tags
}

// Params are the knobs of one search.
type Params struct {
	Threshold float64 // cosine floor, 0..1
	Terms     int     // number of retained distinct keyword terms
	// RecencyWeight in 0..1 blends the 30-day half-life multiplier in:
	// adjusted = score × (1 − w + w × 0.5^(age/30d)). 0 disables recency.
	RecencyWeight float64
	Now           time.Time
}

// Result is a fused, entity-level result.
type Result struct {
	Candidate
	Score    float64 // relative RRF score
	Adjusted float64 // Score with the recency multiplier applied (== Score when off)
}

// RequiredMatches is how many of n retained terms a chunk must match to be
// eligible by keywords alone: half, rounded up; a single term must match.
func RequiredMatches(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + 1) / 2
}

// Eligible reports whether c passes the gate: similarity at or above the
// threshold, or keyword coverage of at least RequiredMatches(p.Terms).
func Eligible(c Candidate, p Params) bool {
	if c.Similarity != nil && *c.Similarity >= p.Threshold {
		return true
	}
	if p.Terms > 0 && c.KeywordRank > 0 && c.Matched >= RequiredMatches(p.Terms) {
		return true
	}
	return false
}

// RRF is the reciprocal-rank-fusion score of one candidate; a missing
// branch contributes 0.
func RRF(vectorRank, keywordRank int) float64 {
	var s float64
	if vectorRank > 0 {
		s += 1 / float64(K+vectorRank)
	}
	if keywordRank > 0 {
		s += 1 / float64(K+keywordRank)
	}
	return s
}

// Recency is the multiplier for an entity last updated at t.
func Recency(t, now time.Time, weight float64) float64 {
	if weight <= 0 {
		return 1
	}
	if weight > 1 {
		weight = 1
	}
	age := now.Sub(t)
	if age < 0 {
		age = 0
	}
	decay := math.Exp2(-float64(age) / float64(HalfLife))
	return 1 - weight + weight*decay
}

// Fuse gates, scores and orders candidates and deduplicates them to one
// result per entity (its best chunk). Ordering: adjusted score descending,
// then lower keyword rank, then lower vector rank (a missing rank sorts
// after any present one), then entity id, then chunk id.
func Fuse(cands []Candidate, p Params) []Result {
	best := make(map[uuid.UUID]int, len(cands))
	out := make([]Result, 0, len(cands))
	for _, c := range cands {
		if !Eligible(c, p) {
			continue
		}
		s := RRF(c.VectorRank, c.KeywordRank)
		r := Result{Candidate: c, Score: s, Adjusted: s * Recency(c.UpdatedAt, p.Now, p.RecencyWeight)}
		if i, ok := best[c.EntityID]; ok {
			if less(&r, &out[i]) {
				out[i] = r
			}
			continue
		}
		best[c.EntityID] = len(out)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Result) int { return cmpResults(&a, &b) })
	return out
}

// Unsettled returns the indexes of the pending candidates (similarity not
// fetched yet) whose eligibility decides the first limit results of Fuse.
// Ranks and recency alone fix the order in which Fuse considers
// candidates; only eligibility needs similarity. Walking that order, a
// pending candidate is assumed eligible until its similarity is known; one
// that passes by keyword coverage is eligible whatever its similarity and
// is not returned. The caller fetches the returned candidates'
// similarities, clears their SimilarityPending, and calls again until
// nothing is returned: Fuse then yields the same first limit results, in
// the same order, as if every similarity had been known, while only the
// few candidates near the top were looked up. Results still pending then
// (Result.SimilarityPending) passed by coverage; their similarity is only
// shown, and the caller fetches it with the rest of the results.
func Unsettled(cands []Candidate, p Params, limit int) []int {
	pending := false
	for i := range cands {
		if cands[i].SimilarityPending {
			pending = true
			break
		}
	}
	if !pending || limit <= 0 {
		return nil
	}
	rs := make([]Result, len(cands))
	order := make([]int, len(cands))
	for i, c := range cands {
		s := RRF(c.VectorRank, c.KeywordRank)
		rs[i] = Result{Candidate: c, Score: s, Adjusted: s * Recency(c.UpdatedAt, p.Now, p.RecencyWeight)}
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return cmpResults(&rs[i], &rs[j]) })
	taken := make(map[uuid.UUID]bool, limit)
	var need []int
	for _, i := range order {
		if len(taken) >= limit {
			break
		}
		c := &cands[i]
		if taken[c.EntityID] {
			continue
		}
		switch {
		case c.SimilarityPending && !Eligible(*c, p):
			// Eligible sees no similarity while it is pending: only
			// coverage can pass it, and then similarity does not matter.
			need = append(need, i)
			taken[c.EntityID] = true
		case Eligible(*c, p):
			taken[c.EntityID] = true
		}
	}
	return need
}

// less orders a before b.
func less(a, b *Result) bool { return cmpResults(a, b) < 0 }

// cmpResults is Fuse's order as a comparison: adjusted score descending,
// then keyword rank, vector rank (missing ranks last), entity id, chunk id.
// Chunk ids are unique, so no two candidates compare equal and an unstable
// sort gives the same order as a stable one.
func cmpResults(a, b *Result) int {
	switch {
	case a.Adjusted > b.Adjusted:
		return -1
	case a.Adjusted < b.Adjusted:
		return 1
	}
	if ka, kb := rankKey(a.KeywordRank), rankKey(b.KeywordRank); ka != kb {
		return cmp.Compare(ka, kb)
	}
	if va, vb := rankKey(a.VectorRank), rankKey(b.VectorRank); va != vb {
		return cmp.Compare(va, vb)
	}
	if c := bytes.Compare(a.EntityID[:], b.EntityID[:]); c != 0 {
		return c
	}
	return bytes.Compare(a.ChunkID[:], b.ChunkID[:])
}

func rankKey(r int) int {
	if r <= 0 {
		return math.MaxInt
	}
	return r
}

// VectorItem is one entry of the vector branch's list, nearest first.
// It carries no term coverage: coverage counts only for candidates in the
// keyword pool (Eligible), whose KeywordItem says which terms they match.
type VectorItem struct {
	ChunkID, EntityID uuid.UUID
	Content           string
	Similarity        float64
	UpdatedAt         time.Time
}

// KeywordItem is one entry of the keyword pool.
type KeywordItem struct {
	ChunkID, EntityID uuid.UUID
	Content           string
	Rank              float64 // lexical rank, higher is better
	Matched           int
	Similarity        *float64
	// SimilarityPending: the store has not computed Similarity yet.
	SimilarityPending bool
	UpdatedAt         time.Time
	Features          *Features
}

// KeywordOrder compares two keyword-pool chunks as the keyword ranking
// orders them: higher lexical rank first, then lower chunk id.
func KeywordOrder(rankA float64, chunkA uuid.UUID, rankB float64, chunkB uuid.UUID) int {
	switch {
	case rankA > rankB:
		return -1
	case rankA < rankB:
		return 1
	}
	return bytes.Compare(chunkA[:], chunkB[:])
}

// Merge ranks both lists and joins them by chunk. The vector list must be
// ordered nearest first (ties broken by the caller); the keyword pool is
// ordered here by rank descending, then chunk id.
func Merge(vec []VectorItem, kw []KeywordItem) []Candidate {
	// Order the pool through its indices (the items are large to move);
	// the original index breaks remaining ties, as a stable sort would.
	order := make([]int32, len(kw))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := KeywordOrder(kw[a].Rank, kw[a].ChunkID, kw[b].Rank, kw[b].ChunkID); c != 0 {
			return c
		}
		return int(a - b)
	})
	idx := make(map[uuid.UUID]int, len(vec)+len(kw))
	out := make([]Candidate, 0, len(vec)+len(kw))
	sims := make([]float64, len(vec))
	for i, v := range vec {
		if _, dup := idx[v.ChunkID]; dup {
			continue
		}
		sims[i] = v.Similarity
		idx[v.ChunkID] = len(out)
		out = append(out, Candidate{ChunkID: v.ChunkID, EntityID: v.EntityID, Content: v.Content,
			VectorRank: i + 1, Similarity: &sims[i], UpdatedAt: v.UpdatedAt})
	}
	for i, o := range order {
		k := &kw[o]
		if j, ok := idx[k.ChunkID]; ok {
			if out[j].KeywordRank == 0 {
				out[j].KeywordRank = i + 1
				out[j].Matched = k.Matched
				out[j].Features = k.Features
			}
			continue
		}
		idx[k.ChunkID] = len(out)
		out = append(out, Candidate{ChunkID: k.ChunkID, EntityID: k.EntityID, Content: k.Content,
			KeywordRank: i + 1, Similarity: k.Similarity, SimilarityPending: k.SimilarityPending,
			Matched: k.Matched, UpdatedAt: k.UpdatedAt, Features: k.Features})
	}
	return out
}
