package quality

import (
	"math"
	"slices"
)

// Cutoffs of the metrics.
const (
	NDCGAt   = 5
	MRRAt    = 10
	RecallAt = 10
)

// Scores are one query's metrics, each in 0..1.
type Scores struct {
	NDCG5    float64 `json:"ndcg5"`
	MRR10    float64 `json:"mrr10"`
	Recall10 float64 `json:"recall10"`
	Hit1     float64 `json:"hit1"`
}

// Score rates a ranking (result keys, best first) against graded labels:
//
//   - nDCG@5: Σ (2^grade − 1) / log2(rank + 1) over the first 5 results,
//     divided by the same sum for the ideal order of the labels;
//   - MRR@10: 1 / rank of the first result with a grade above 0 within the
//     first 10, else 0;
//   - recall@10: the share of entities graded above 0 found in the first 10;
//   - hit@1: 1 when the first result has the query's highest grade.
//
// A key repeated in ranked counts once, at its first place.
func Score(ranked []string, relevant map[string]int) Scores {
	var s Scores
	seen := make(map[string]bool, len(ranked))
	top, positives := 0, 0
	grades := make([]int, 0, len(relevant))
	for _, g := range relevant {
		if g > 0 {
			positives++
			grades = append(grades, g)
			top = max(top, g)
		}
	}
	if positives == 0 {
		return s
	}
	slices.SortFunc(grades, func(a, b int) int { return b - a })
	var dcg, idcg float64
	for i := 0; i < NDCGAt && i < len(grades); i++ {
		idcg += gain(grades[i]) / math.Log2(float64(i+2))
	}
	found, rank := 0, 0
	for _, k := range ranked {
		if seen[k] {
			continue
		}
		seen[k] = true
		rank++
		g := relevant[k]
		if rank <= NDCGAt {
			dcg += gain(g) / math.Log2(float64(rank+1))
		}
		if g > 0 && rank <= MRRAt && s.MRR10 == 0 {
			s.MRR10 = 1 / float64(rank)
		}
		if g > 0 && rank <= RecallAt {
			found++
		}
		if rank == 1 && g == top {
			s.Hit1 = 1
		}
	}
	s.NDCG5 = dcg / idcg
	s.Recall10 = float64(found) / float64(positives)
	return s
}

func gain(grade int) float64 { return math.Exp2(float64(grade)) - 1 }

// Summary is the mean of each metric over some queries.
type Summary struct {
	Queries int `json:"queries"`
	Scores
}

// Add accumulates one query's scores (call Mean when done).
func (s *Summary) Add(x Scores) {
	s.Queries++
	s.NDCG5 += x.NDCG5
	s.MRR10 += x.MRR10
	s.Recall10 += x.Recall10
	s.Hit1 += x.Hit1
}

// Mean turns the sums into means.
func (s Summary) Mean() Summary {
	if s.Queries == 0 {
		return s
	}
	n := float64(s.Queries)
	s.NDCG5 /= n
	s.MRR10 /= n
	s.Recall10 /= n
	s.Hit1 /= n
	return s
}
