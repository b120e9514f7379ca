package postgres

import (
	"context"
	"fmt"
	"math"
	"strings"
)

// clusterSettings are the PostgreSQL settings and sizes that decide how
// fast the store can be.
type clusterSettings struct {
	SharedBuffers      int64 // bytes
	EffectiveCacheSize int64 // bytes
	WorkMem            int64 // bytes
	RandomPageCost     float64
	// HNSW is each vector index's size in bytes, by name.
	HNSW map[string]int64
}

// Advice thresholds.
const (
	minSharedBuffers = 256 << 20
	minWorkMem       = 8 << 20
)

// SettingsAdvice reads the cluster's settings and the vector indexes'
// sizes and returns one warning, with its fix, for each that will make
// the store slow (PostgreSQL's defaults are sized for a small machine).
// The server logs them at start and lists them in /health.
func (s *Store) SettingsAdvice(ctx context.Context) ([]string, error) {
	ctx = storeWide(ctx)
	cs := clusterSettings{HNSW: map[string]int64{}}
	err := s.pool.QueryRow(ctx, `SELECT
			(SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'),
			(SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'effective_cache_size'),
			(SELECT setting::bigint * 1024 FROM pg_settings WHERE name = 'work_mem'),
			current_setting('random_page_cost')::float8`).
		Scan(&cs.SharedBuffers, &cs.EffectiveCacheSize, &cs.WorkMem, &cs.RandomPageCost)
	if err != nil {
		return nil, fmt.Errorf("postgres: read settings: %w", mapErr(err))
	}
	rows, err := s.pool.Query(ctx, `SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c
		WHERE c.relkind = 'i' AND c.relnamespace = current_schema()::regnamespace AND (c.relname LIKE 'chunks_embedding_hnsw_m%' OR c.relname LIKE 'chunks_embedding_bq_m%')
		ORDER BY c.relname`)
	if err != nil {
		return nil, fmt.Errorf("postgres: read index sizes: %w", mapErr(err))
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var size int64
		if err := rows.Scan(&name, &size); err != nil {
			return nil, fmt.Errorf("postgres: read index sizes: %w", err)
		}
		cs.HNSW[name] = size
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: read index sizes: %w", mapErr(err))
	}
	return advise(cs), nil
}

// advise turns settings into warnings with their fixes.
func advise(cs clusterSettings) []string {
	var out []string
	if cs.SharedBuffers < minSharedBuffers {
		out = append(out, fmt.Sprintf("PostgreSQL shared_buffers is %s: searches will read from the operating system's cache or the disk; "+
			"set it to about a quarter of the machine's memory (ALTER SYSTEM SET shared_buffers = '2GB', then restart PostgreSQL)", size(cs.SharedBuffers)))
	}
	if cs.WorkMem < minWorkMem {
		out = append(out, fmt.Sprintf("PostgreSQL work_mem is %s: keyword ranking sorts spill to disk; "+
			"set it to 16MB or more (ALTER SYSTEM SET work_mem = '16MB'; SELECT pg_reload_conf())", size(cs.WorkMem)))
	}
	if cs.RandomPageCost >= 4 {
		out = append(out, fmt.Sprintf("PostgreSQL random_page_cost is %g (a spinning disk's): on SSD storage the planner then avoids the indexes; "+
			"ALTER SYSTEM SET random_page_cost = 1.1; SELECT pg_reload_conf()", cs.RandomPageCost))
	}
	for name, sz := range cs.HNSW {
		// A float index can give way to the binary one, about a
		// sixteenth of its size at 1,536 dimensions.
		binary := ""
		if strings.HasPrefix(name, "chunks_embedding_hnsw_m") {
			binary = " or switch to the binary-quantised index (DATABASE_VECTOR_INDEX=binary)"
		}
		switch {
		case sz > cs.EffectiveCacheSize && sz > cs.SharedBuffers:
			out = append(out, fmt.Sprintf("the vector index %s is %s, larger than shared_buffers (%s) and effective_cache_size (%s): "+
				"each vector search reads it from disk; give PostgreSQL more memory (shared_buffers, effective_cache_size)%s "+
				"or use a smaller embedding model", name, size(sz), size(cs.SharedBuffers), size(cs.EffectiveCacheSize), binary))
		case sz > cs.SharedBuffers:
			out = append(out, fmt.Sprintf("the vector index %s is %s, larger than shared_buffers (%s): vector searches compete for the buffer cache; "+
				"raise shared_buffers above the index's size%s", name, size(sz), size(cs.SharedBuffers), binary))
		}
	}
	return out
}

// size renders a byte count for a person.
func size(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%d MiB", b>>20)
	default:
		return fmt.Sprintf("%d KiB", b>>10)
	}
}

// memIndexShape is what memIndexAdvice judges: one workspace's loaded
// in-memory index and the settings it runs under.
type memIndexShape struct {
	Vectors     int   // vectors held, every model's
	VectorBytes int64 // their arrays
	Half        bool  // Config.MemoryIndexHalf
	Candidates  int   // Config.MemoryIndexCandidates
	MemoryLimit int64 // the Go runtime's soft memory limit (math.MaxInt64: none)
}

// Thresholds of memIndexAdvice.
const (
	adviseLimitAbove      = 1 << 30 // vector bytes above which a memory limit matters
	adviseHalfAbove       = 2 << 30 // float32 vector bytes above which half precision pays
	adviseCandidatesAbove = 200_000 // vectors above which an exact scan costs tens of ms
)

// memIndexAdvice returns a warning, with its fix, for each way a loaded
// in-memory index will make the process slow or risk running out of
// memory.
func memIndexAdvice(m memIndexShape) []string {
	var out []string
	if m.VectorBytes > adviseLimitAbove && m.MemoryLimit == math.MaxInt64 {
		out = append(out, fmt.Sprintf("the in-memory index holds %s of vectors and no memory limit is set: the garbage collector may let the heap reach twice what is live; set GOMEMLIMIT near the memory this process may use", size(m.VectorBytes)))
	}
	if !m.Half && m.VectorBytes > adviseHalfAbove {
		out = append(out, fmt.Sprintf("the in-memory index holds %s of float32 vectors: DATABASE_MEMORY_INDEX_HALF=true keeps them in two thirds of that (recall@10 0.995 against float32 ranking at a million chunks)", size(m.VectorBytes)))
	}
	if m.Candidates == 0 && m.Vectors > adviseCandidatesAbove {
		out = append(out, fmt.Sprintf("the in-memory index ranks %d vectors exactly per search (tens of ms of CPU each): DATABASE_MEMORY_INDEX_CANDIDATES=10000 ranks the 10,000 nearest by sign code exactly (recall@10 0.995 at a million chunks)", m.Vectors))
	}
	return out
}
