package main

import (
	"slices"
	"testing"
)

const samplePlan = `Limit  (cost=33.39..33.39 rows=1 width=4) (actual time=0.084..2.500 rows=7 loops=1)
  Buffers: shared hit=120 read=4 dirtied=1, temp read=9 written=9
  InitPlan 1 (returns $0)
    ->  Result  (cost=0.00..0.01 rows=1 width=32) (actual time=0.001..0.001 rows=1 loops=1)
  InitPlan 2 (returns $1)
    ->  Result  (cost=0.00..0.01 rows=1 width=32) (never executed)
  ->  Sort  (cost=33.37..33.37 rows=1 width=4) (actual time=0.083..2.400 rows=7 loops=1)
        Sort Key: t.a
        ->  Nested Loop  (cost=0.27..33.36 rows=1 width=4) (actual time=0.027..2.300 rows=7 loops=1)
              ->  Seq Scan on t  (cost=0.00..29.05 rows=1 width=4) (actual time=0.015..0.300 rows=7 loops=1)
                    Filter: ((b @@ $0) AND (b @@ $1))
              ->  Index Only Scan using pg_class_oid_index on pg_class c  (cost=0.27..4.29 rows=1 width=4) (actual time=0.200..0.250 rows=1 loops=7)
                    Index Cond: (oid = (t.a)::oid)
Planning:
  Buffers: shared hit=116
Planning Time: 10.397 ms
Execution Time: 2.601 ms
`

func TestSummarizePlan(t *testing.T) {
	s := summarizePlan(samplePlan, 3)
	if s.ExecMS != 2.601 || s.PlanMS != 10.397 {
		t.Errorf("times: exec %v plan %v", s.ExecMS, s.PlanMS)
	}
	if s.SharedHit != 120 || s.SharedRead != 4 || s.Rows != 7 {
		t.Errorf("buffers/rows: hit %d read %d rows %d", s.SharedHit, s.SharedRead, s.Rows)
	}
	if want := []string{"Limit", "Sort", "Nested Loop"}; !slices.Equal(s.TopNodes, want) {
		t.Errorf("top nodes %q, want %q", s.TopNodes, want)
	}
	if want := []string{"Seq Scan on t", "Index Only Scan using pg_class_oid_index on pg_class c"}; !slices.Equal(s.Scans, want) {
		t.Errorf("scans %q, want %q", s.Scans, want)
	}
	// Index Only Scan: 0.25 ms × 7 loops = 1.75 ms, more than any other
	// node's own time.
	if s.Hottest != "Index Only Scan using pg_class_oid_index on pg_class c" || s.HottestMS < 1.74 || s.HottestMS > 1.76 {
		t.Errorf("hottest %q (%v ms)", s.Hottest, s.HottestMS)
	}
}

func TestShortLabel(t *testing.T) {
	for in, want := range map[string]string{
		"Index Scan using chunks_embedding_hnsw_m1 on chunks c":  "Index(chunks_embedding_hnsw_m1)",
		"Index Only Scan using pg_class_oid_index on pg_class c": "IndexOnly(pg_class_oid_index)",
		"Parallel Seq Scan on chunks c":                          "Par Seq(chunks)",
		"Bitmap Heap Scan on chunks c":                           "BitmapHeap(chunks)",
		"Bitmap Index Scan on chunks_tsv":                        "BitmapIdx(chunks_tsv)",
		"Subquery Scan on r":                                     "Subquery(r)",
		"Nested Loop":                                            "Nested Loop",
	} {
		if got := shortLabel(in, 60); got != want {
			t.Errorf("shortLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
