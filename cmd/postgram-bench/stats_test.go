package main

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(i + 1) // 1..100 ms
	}
	twoHundred := make([]time.Duration, 200)
	for i := range twoHundred {
		twoHundred[i] = ms(i + 1)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single p50", []time.Duration{ms(7)}, 50, ms(7)},
		{"single p99", []time.Duration{ms(7)}, 99, ms(7)},
		{"p0 is the minimum", hundred, 0, ms(1)},
		{"p50 of 100", hundred, 50, ms(50)},
		{"p95 of 100", hundred, 95, ms(95)},
		{"p99 of 100", hundred, 99, ms(99)},
		{"p100 of 100", hundred, 100, ms(100)},
		{"p95 of 200 (exact rank 190)", twoHundred, 95, ms(190)},
		{"p99 of 200", twoHundred, 99, ms(198)},
		{"p50 of two rounds up to the first", []time.Duration{ms(1), ms(2)}, 50, ms(1)},
		{"p51 of two", []time.Duration{ms(1), ms(2)}, 51, ms(2)},
		{"p99.9 of 100 is the maximum", hundred, 99.9, ms(100)},
	}
	for _, tc := range tests {
		if got := percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: percentile(p=%v) = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
}

func TestSummarizeDoesNotReorderInput(t *testing.T) {
	in := []time.Duration{5, 1, 4, 2, 3}
	s := summarize(in)
	if s.N != 5 || s.P50 != 3 || s.P95 != 5 || s.P99 != 5 || s.Max != 5 || s.Mean != 3 {
		t.Fatalf("summarize = %+v", s)
	}
	if in[0] != 5 || in[1] != 1 {
		t.Fatalf("summarize sorted its input in place: %v", in)
	}
}

func TestCounterString(t *testing.T) {
	c := counter{"hnsw": 3, "exact": 1, "and": 3}
	if got, want := c.String(), "and:3 hnsw:3 exact:1"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if got := (counter{}).String(); got != "-" {
		t.Fatalf("empty String() = %q", got)
	}
}
