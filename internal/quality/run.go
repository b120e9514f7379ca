package quality

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Result is one search result as the benchmark sees it.
type Result struct {
	// Names are the identifiers the result's entity is known by (its id,
	// the value of the labels' metadata key field): a relevance key
	// matching any of them labels it.
	Names []string
	// Explain is shown for the worst queries (free form).
	Explain string
}

// Searcher runs one query and returns its results, best first.
type Searcher func(ctx context.Context, q Query) ([]Result, error)

// QueryReport is one query's outcome.
type QueryReport struct {
	ID       string      `json:"id"`
	Text     string      `json:"text"`
	Category string      `json:"category"`
	Split    string      `json:"split"`
	Scores   Scores      `json:"scores"`
	Top      []RankedRow `json:"top"`
	// Missing lists the entities graded above 0 not in the results.
	Missing []string `json:"missing,omitempty"`
}

// RankedRow is one returned result with its grade.
type RankedRow struct {
	Key     string `json:"key"`
	Grade   int    `json:"grade"`
	Explain string `json:"explain,omitempty"`
}

// CategoryReport is one category's means.
type CategoryReport struct {
	Category string `json:"category"`
	Summary
}

// Report is a run over one split.
type Report struct {
	Split      string           `json:"split"`
	Overall    Summary          `json:"overall"`
	Categories []CategoryReport `json:"categories"`
	Queries    []QueryReport    `json:"queries"`
}

// Run searches every query of split and scores it.
func Run(ctx context.Context, set *Set, split string, search Searcher) (*Report, error) {
	qs := set.Only(split)
	if len(qs) == 0 {
		return nil, fmt.Errorf("quality: split %q has no queries", split)
	}
	if split == "" {
		split = "all"
	}
	rep := &Report{Split: split}
	sums := map[string]*Summary{}
	var overall Summary
	for _, q := range qs {
		res, err := search(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("quality: query %q (line %d): %w", q.ID, q.Line, err)
		}
		qr := QueryReport{ID: q.ID, Text: q.Text, Category: q.Category, Split: q.Split}
		ranked := make([]string, len(res))
		for i, r := range res {
			ranked[i] = labelOf(r.Names, q.Relevant)
			qr.Top = append(qr.Top, RankedRow{Key: ranked[i], Grade: q.Relevant[ranked[i]], Explain: r.Explain})
		}
		for _, k := range sortedKeys(q.Relevant) {
			if q.Relevant[k] > 0 && !slices.Contains(ranked, k) {
				qr.Missing = append(qr.Missing, k)
			}
		}
		qr.Scores = Score(ranked, q.Relevant)
		rep.Queries = append(rep.Queries, qr)
		if sums[q.Category] == nil {
			sums[q.Category] = &Summary{}
			rep.Categories = append(rep.Categories, CategoryReport{Category: q.Category})
		}
		sums[q.Category].Add(qr.Scores)
		overall.Add(qr.Scores)
	}
	for i := range rep.Categories {
		rep.Categories[i].Summary = sums[rep.Categories[i].Category].Mean()
	}
	rep.Overall = overall.Mean()
	return rep, nil
}

// labelOf returns the name of a result that the labels use, else its
// first name.
func labelOf(names []string, relevant map[string]int) string {
	for _, n := range names {
		if _, ok := relevant[n]; ok {
			return n
		}
	}
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// Worst returns the n queries with the lowest nDCG@5 (ties: lower MRR,
// then id).
func (r *Report) Worst(n int) []QueryReport {
	qs := slices.Clone(r.Queries)
	slices.SortStableFunc(qs, func(a, b QueryReport) int {
		switch {
		case a.Scores.NDCG5 != b.Scores.NDCG5:
			if a.Scores.NDCG5 < b.Scores.NDCG5 {
				return -1
			}
			return 1
		case a.Scores.MRR10 != b.Scores.MRR10:
			if a.Scores.MRR10 < b.Scores.MRR10 {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return qs[:min(n, len(qs))]
}

// Floor is a minimum for one metric, overall or in every category.
type Floor struct {
	Metric      string  // ndcg5, mrr10, recall10 or hit1
	Min         float64 // inclusive
	PerCategory bool    // "each.": every category must reach it
}

// ParseFloors parses "ndcg5=0.85,each.ndcg5=0.70".
func ParseFloors(spec string) ([]Floor, error) {
	var out []Floor
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("floor %q: want metric=minimum, e.g. ndcg5=0.85 or each.ndcg5=0.70", part)
		}
		f := Floor{Metric: strings.TrimSpace(name)}
		if m, ok := strings.CutPrefix(f.Metric, "each."); ok {
			f.Metric, f.PerCategory = m, true
		}
		if _, ok := metric(Scores{}, f.Metric); !ok {
			return nil, fmt.Errorf("floor %q: metric %q is not one of ndcg5, mrr10, recall10, hit1", part, f.Metric)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || v < 0 || v > 1 {
			return nil, fmt.Errorf("floor %q: minimum must be a number in 0..1", part)
		}
		f.Min = v
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no floors in %q", spec)
	}
	return out, nil
}

func metric(s Scores, name string) (float64, bool) {
	switch name {
	case "ndcg5":
		return s.NDCG5, true
	case "mrr10":
		return s.MRR10, true
	case "recall10":
		return s.Recall10, true
	case "hit1":
		return s.Hit1, true
	}
	return 0, false
}

// Check returns one line per floor the report misses.
func (r *Report) Check(floors []Floor) []string {
	var out []string
	for _, f := range floors {
		if !f.PerCategory {
			if v, _ := metric(r.Overall.Scores, f.Metric); v < f.Min {
				out = append(out, fmt.Sprintf("%s overall %.3f < %.3f", f.Metric, v, f.Min))
			}
			continue
		}
		for _, c := range r.Categories {
			if v, _ := metric(c.Scores, f.Metric); v < f.Min {
				out = append(out, fmt.Sprintf("%s in %s %.3f < %.3f", f.Metric, c.Category, v, f.Min))
			}
		}
	}
	return out
}
