package postgram

import (
	"fmt"
	"strings"
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
)

// Valid reports whether m names a ranking.
func (m RankingMode) Valid() bool {
	return m == RankingSeed
}

// Explanation says why a result ranks where it does (SearchRequest.Explain).
type Explanation struct {
	Ranking RankingMode `json:"ranking"`
	// KeywordRank and VectorRank are the best chunk's places in each
	// branch (0: absent); KeywordScore is its lexical score.
	KeywordRank  int     `json:"keyword_rank,omitempty"`
	VectorRank   int     `json:"vector_rank,omitempty"`
	KeywordScore float64 `json:"keyword_score"`
	// KeywordPart and VectorPart are what each branch adds to the score.
	KeywordPart float64 `json:"keyword_part"`
	VectorPart  float64 `json:"vector_part"`
	// Matched is how many of the retained terms the best chunk matches.
	Matched int `json:"matched"`
	Terms   int `json:"terms"`
}

// String renders the explanation on one line.
func (x *Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: kw %.4f (rank %d, score %.4f, %d/%d terms) + vec %.4f (rank %d)",
		x.Ranking, x.KeywordPart, x.KeywordRank, x.KeywordScore, x.Matched, x.Terms, x.VectorPart, x.VectorRank)
	return b.String()
}
