package postgram

import (
	"fmt"
	"strings"

	"github.com/postgram-go/postgram/internal/rank"
	"github.com/postgram-go/postgram/internal/validate"
)

// RankingMode selects how search orders the candidates it found
// (DESIGN.md §4). Every mode finds the same candidates; they differ only in
// the order.
type RankingMode string

// Ranking modes.
const (
	// RankingSeed is the seed's contract: reciprocal-rank fusion of the
	// vector rank and the ts_rank_cd keyword rank, best chunk per entity.
	RankingSeed RankingMode = "seed"
	// RankingV2 scores keywords with BM25 over workspace statistics,
	// weighs an entity's head (name fields) above its body, aggregates the
	// evidence of an entity's chunks, matches inflected forms and typos of
	// rare terms at lower weight, and fuses the branches by score, so a
	// strong match on a rare term is not buried by vector noise
	// (internal/rank; DESIGN.md §4).
	RankingV2 RankingMode = "v2"
)

// Valid reports whether m names a ranking.
func (m RankingMode) Valid() bool {
	return m == RankingSeed || m == RankingV2
}

// RankingWeights are ranking v2's weights (SearchConfig.Weights).
type RankingWeights struct {
	// K1 and B are BM25's term-frequency saturation and length
	// normalisation.
	K1 float64 `json:"k1"`
	B  float64 `json:"b"`
	// InflectionWeight and TypoWeight scale a term matched by an inflected
	// form or a typo correction instead of itself (0..1).
	InflectionWeight float64 `json:"inflection_weight"`
	TypoWeight       float64 `json:"typo_weight"`
	// HeadWeight scales the IDF of a term an entity's head holds (its name
	// fields: metadata name, title, aliases, first heading, defined subject
	// or leading line), in full for a head of at most HeadLead
	// positions and by HeadLead/n for a longer head of n positions.
	HeadWeight float64 `json:"head_weight"`
	HeadLead   float64 `json:"head_lead"`
	// HeadStart: a term at one of the head's first HeadStart positions
	// counts in full whatever the head's length (0: off).
	HeadStart float64 `json:"head_start"`
	// TagWeight and TypeWeight scale the IDF of a term that is one of the
	// entity's tags, or its type.
	TagWeight  float64 `json:"tag_weight"`
	TypeWeight float64 `json:"type_weight"`
	// MoreChunks scales the evidence of an entity's matching chunks beyond
	// its best.
	MoreChunks float64 `json:"more_chunks"`
	// VectorWeight is the vector branch's share of the fused score (0..1)
	// when the keyword branch's best result matches every query term; the
	// share grows to 1 as that result's coverage c of the query's IDF mass
	// falls: VectorWeight + (1 − VectorWeight)(1 − c)².
	VectorWeight float64 `json:"vector_weight"`
	// Coverage: an entity matching this share of the query's IDF mass is
	// eligible by keywords alone (0..1; the seed's rules apply as well).
	Coverage float64 `json:"coverage"`
	// CoverageBoost: an entity's keyword evidence is scaled by the share
	// of the query's IDF mass it matches, raised to this power (0: off).
	CoverageBoost float64 `json:"coverage_boost"`
	// TypoMaxDF: terms held by at most this many chunks are expanded to
	// typo corrections; MaxInflections and MaxTypos bound the expansions
	// of one term.
	TypoMaxDF      int64 `json:"typo_max_df"`
	MaxInflections int   `json:"max_inflections"`
	MaxTypos       int   `json:"max_typos"`
	// HeadCandidates is how many entities whose head (name fields) alone
	// matches a term join the keyword pool, so an entity named only in its
	// metadata is found by that name (0: none).
	HeadCandidates int `json:"head_candidates"`
}

// DefaultRankingWeights returns ranking v2's default weights.
func DefaultRankingWeights() RankingWeights {
	p := rank.DefaultParams()
	return RankingWeights{K1: p.K1, B: p.B, InflectionWeight: p.InflectionWeight, TypoWeight: p.TypoWeight,
		HeadWeight: p.HeadWeight, HeadLead: p.HeadLead, HeadStart: p.HeadStart, TagWeight: p.TagWeight, TypeWeight: p.TypeWeight, MoreChunks: p.MoreChunks, VectorWeight: p.VectorWeight,
		Coverage: p.Coverage, CoverageBoost: p.CoverageBoost, TypoMaxDF: p.TypoMaxDF, MaxInflections: p.MaxInflections, MaxTypos: p.MaxTypos,
		HeadCandidates: p.HeadCandidates}
}

func (w *RankingWeights) params() rank.Params {
	return rank.Params{K1: w.K1, B: w.B, InflectionWeight: w.InflectionWeight, TypoWeight: w.TypoWeight,
		HeadWeight: w.HeadWeight, HeadLead: w.HeadLead, HeadStart: w.HeadStart, TagWeight: w.TagWeight, TypeWeight: w.TypeWeight, MoreChunks: w.MoreChunks, VectorWeight: w.VectorWeight,
		Coverage: w.Coverage, CoverageBoost: w.CoverageBoost, TypoMaxDF: w.TypoMaxDF, MaxInflections: w.MaxInflections, MaxTypos: w.MaxTypos,
		HeadCandidates: w.HeadCandidates}
}

func (w *RankingWeights) validate() error {
	unit := func(name string, v float64) error {
		if !(v >= 0 && v <= 1) {
			return validate.Invalid("search.weights."+name, "must be between 0 and 1")
		}
		return nil
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"b", w.B}, {"inflection_weight", w.InflectionWeight}, {"typo_weight", w.TypoWeight},
		{"vector_weight", w.VectorWeight}, {"coverage", w.Coverage}} {
		if err := unit(c.name, c.v); err != nil {
			return err
		}
	}
	switch {
	case !(w.K1 > 0 && w.K1 <= 10):
		return validate.Invalid("search.weights.k1", "must be in (0, 10]")
	case !(w.HeadWeight >= 0 && w.HeadWeight <= 100):
		return validate.Invalid("search.weights.head_weight", "must be in [0, 100]")
	case !(w.HeadStart >= 0 && w.HeadStart <= 1000):
		return validate.Invalid("search.weights.head_start", "must be in [0, 1000]")
	case !(w.TagWeight >= 0 && w.TagWeight <= 100):
		return validate.Invalid("search.weights.tag_weight", "must be in [0, 100]")
	case !(w.TypeWeight >= 0 && w.TypeWeight <= 100):
		return validate.Invalid("search.weights.type_weight", "must be in [0, 100]")
	case !(w.HeadLead >= 1 && w.HeadLead <= 1000):
		return validate.Invalid("search.weights.head_lead", "must be in [1, 1000]")
	case !(w.CoverageBoost >= 0 && w.CoverageBoost <= 10):
		return validate.Invalid("search.weights.coverage_boost", "must be in [0, 10]")
	case !(w.MoreChunks >= 0 && w.MoreChunks <= 10):
		return validate.Invalid("search.weights.more_chunks", "must be in [0, 10]")
	case w.TypoMaxDF < 0:
		return validate.Invalid("search.weights.typo_max_df", "must not be negative")
	case w.MaxInflections < 0 || w.MaxInflections > 16:
		return validate.Invalid("search.weights.max_inflections", "must be in 0..16")
	case w.MaxTypos < 0 || w.MaxTypos > 16:
		return validate.Invalid("search.weights.max_typos", "must be in 0..16")
	case w.HeadCandidates < 0 || w.HeadCandidates > KeywordPoolSize:
		return validate.Invalid("search.weights.head_candidates", "must be in 0..%d", KeywordPoolSize)
	}
	return nil
}

// Explanation says why a result ranks where it does (SearchRequest.Explain).
type Explanation struct {
	Ranking RankingMode `json:"ranking"`
	// KeywordRank and VectorRank are the result's places in each branch
	// (0: absent): for the seed ranking its chunk's, for v2 the entity's
	// place by keyword evidence and its nearest chunk's place.
	KeywordRank int `json:"keyword_rank,omitempty"`
	VectorRank  int `json:"vector_rank,omitempty"`
	// KeywordPart and VectorPart are what each branch adds to the score.
	KeywordPart float64 `json:"keyword_part"`
	VectorPart  float64 `json:"vector_part"`

	// Seed ranking: the chunk's ts_rank_cd and how many of the retained
	// terms it matches.
	TSRank  float64 `json:"ts_rank,omitempty"`
	Matched int     `json:"matched,omitempty"`

	// Ranking v2: how each term matched, the keyword evidence (BM25 of the
	// best chunk, of the entity's other chunks, and of its head), its
	// share of the best result's, the similarity relative to the vector
	// list's range, and the share of the query's IDF mass matched.
	Terms        []TermMatch `json:"terms,omitempty"`
	BM25         float64     `json:"bm25,omitempty"`
	MoreChunks   float64     `json:"more_chunks,omitempty"`
	Head         float64     `json:"head,omitempty"`
	KeywordShare float64     `json:"keyword_share,omitempty"`
	VectorShare  float64     `json:"vector_share,omitempty"`
	Coverage     float64     `json:"coverage,omitempty"`
	Chunks       int         `json:"chunks,omitempty"`
}

// TermMatch is how one query term matched a result: the lexeme found and
// its kind (exact, inflection or typo), and where ("head" when only the
// entity's name fields hold it); Match is empty when the term did not
// match.
type TermMatch struct {
	Term  string `json:"term"`
	Match string `json:"match,omitempty"`
}

// String renders the explanation on one line.
func (x *Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: keyword %.4f (rank %d) + vector %.4f (rank %d)", x.Ranking, x.KeywordPart, x.KeywordRank, x.VectorPart, x.VectorRank)
	if x.Ranking == RankingSeed {
		fmt.Fprintf(&b, "; ts_rank %.4f, %d terms", x.TSRank, x.Matched)
		return b.String()
	}
	fmt.Fprintf(&b, "; bm25 %.2f + more %.2f + head %.2f, coverage %.2f, %d chunks;", x.BM25, x.MoreChunks, x.Head, x.Coverage, x.Chunks)
	for _, t := range x.Terms {
		m := t.Match
		if m == "" {
			m = "-"
		}
		fmt.Fprintf(&b, " %s=%s", t.Term, m)
	}
	return b.String()
}
