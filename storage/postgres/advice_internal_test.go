package postgres

import (
	"math"
	"strings"
	"testing"
)

func TestAdvise(t *testing.T) {
	t.Parallel()
	defaults := clusterSettings{SharedBuffers: 128 << 20, EffectiveCacheSize: 4 << 30, WorkMem: 4 << 20, RandomPageCost: 4,
		HNSW: map[string]int64{"chunks_embedding_hnsw_m1": 6 << 30}}
	got := strings.Join(advise(defaults), "\n")
	for _, want := range []string{"shared_buffers is 128 MiB", "ALTER SYSTEM SET shared_buffers", "work_mem is 4 MiB",
		"random_page_cost is 4", "chunks_embedding_hnsw_m1 is 6.0 GiB, larger than shared_buffers (128 MiB) and effective_cache_size (4.0 GiB)",
		"DATABASE_VECTOR_INDEX=binary"} {
		if !strings.Contains(got, want) {
			t.Errorf("advice lacks %q:\n%s", want, got)
		}
	}
	tuned := clusterSettings{SharedBuffers: 4 << 30, EffectiveCacheSize: 12 << 30, WorkMem: 32 << 20, RandomPageCost: 1.1,
		HNSW: map[string]int64{"chunks_embedding_hnsw_m1": 1 << 30}}
	if a := advise(tuned); len(a) != 0 {
		t.Errorf("a tuned cluster gets advice: %v", a)
	}
	mid := tuned
	mid.HNSW = map[string]int64{"chunks_embedding_hnsw_m2": 5 << 30}
	if a := advise(mid); len(a) != 1 || !strings.Contains(a[0], "larger than shared_buffers (4.0 GiB): vector searches compete") {
		t.Errorf("index above shared_buffers only: %v", a)
	}
	// A binary index too large is told to get memory, not to switch.
	bq := tuned
	bq.HNSW = map[string]int64{"chunks_embedding_bq_m2": 5 << 30}
	if a := advise(bq); len(a) != 1 || !strings.Contains(a[0], "chunks_embedding_bq_m2 is 5.0 GiB") || strings.Contains(a[0], "DATABASE_VECTOR_INDEX") {
		t.Errorf("binary index above shared_buffers: %v", a)
	}
}

func TestMemIndexAdvice(t *testing.T) {
	t.Parallel()
	million := memIndexShape{Vectors: 1_000_000, VectorBytes: 8 << 30, MemoryLimit: math.MaxInt64}
	got := strings.Join(memIndexAdvice(million), "\n")
	for _, want := range []string{"holds 8.0 GiB of vectors and no memory limit is set", "GOMEMLIMIT",
		"DATABASE_MEMORY_INDEX_HALF=true", "ranks 1000000 vectors exactly", "DATABASE_MEMORY_INDEX_CANDIDATES=10000"} {
		if !strings.Contains(got, want) {
			t.Errorf("advice lacks %q:\n%s", want, got)
		}
	}
	tuned := memIndexShape{Vectors: 1_000_000, VectorBytes: 5 << 30, Half: true, Candidates: 10_000, MemoryLimit: 16 << 30}
	if a := memIndexAdvice(tuned); len(a) != 0 {
		t.Errorf("a tuned index gets advice: %v", a)
	}
	small := memIndexShape{Vectors: 6_000, VectorBytes: 50 << 20, MemoryLimit: math.MaxInt64}
	if a := memIndexAdvice(small); len(a) != 0 {
		t.Errorf("a small index gets advice: %v", a)
	}
}
