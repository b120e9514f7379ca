package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100) of sorted, which
// must be in ascending order, by the nearest-rank method: the smallest
// sample such that at least p% of the samples are less than or equal to
// it. It returns 0 for no samples; p <= 0 gives the minimum.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	if p >= 100 {
		return sorted[n-1]
	}
	// Rank = ceil(p/100 × n), computed in integers of basis points so that
	// e.g. 95% of 200 is exactly 190 rather than 190.00000000000003.
	bp := int64(p*100 + 0.5) // p in hundredths of a percent
	rank := int((bp*int64(n) + 10000 - 1) / 10000)
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// summary holds a latency distribution's headline numbers.
type summary struct {
	N             int
	P50, P95, P99 time.Duration
	Mean, Max     time.Duration
}

// summarize sorts a copy of samples and returns its percentiles.
func summarize(samples []time.Duration) summary {
	s := slices.Clone(samples)
	slices.Sort(s)
	out := summary{N: len(s), P50: percentile(s, 50), P95: percentile(s, 95), P99: percentile(s, 99)}
	if len(s) > 0 {
		var sum time.Duration
		for _, d := range s {
			sum += d
		}
		out.Mean = sum / time.Duration(len(s))
		out.Max = s[len(s)-1]
	}
	return out
}

// counter counts labelled occurrences (vector plans, keyword probes,
// embedding sources).
type counter map[string]int

// String renders the counts as "a:3 b:1", most frequent first, ties by name;
// "-" when empty.
func (c counter) String() string {
	if len(c) == 0 {
		return "-"
	}
	keys := slices.Collect(maps.Keys(c))
	slices.SortFunc(keys, func(a, b string) int {
		if c[a] != c[b] {
			return c[b] - c[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, c[k])
	}
	return strings.Join(parts, " ")
}

// rate returns n per second over d, 0 when d is 0.
func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
