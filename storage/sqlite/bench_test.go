package sqlite

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// Benchmark fixtures are built once per test binary run into a temporary
// directory that TestMain removes, or, when POSTGRAM_SQLITE_FIXTURES names
// a directory, built there once and reused by later runs.
var (
	fixtureDir  string
	fixtureOnce = map[string]*sync.Once{}
	fixtureMu   sync.Mutex
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

// benchVocab is the fixture's vocabulary: Zipf-distributed words, so some
// terms are in most chunks and most are rare, plus identifiers.
var benchVocab = func() []string {
	var v []string
	for i := range 5000 {
		v = append(v, fmt.Sprintf("w%d", i))
	}
	return v
}()

func benchContent(r *rand.Rand, z *rand.Zipf, i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Chunk %d ticket PRJ-%d: ", i, i%997)
	for range 60 + r.IntN(60) {
		b.WriteString(benchVocab[z.Uint64()])
		b.WriteByte(' ')
	}
	return b.String()
}

// benchVector is a deterministic embedding with some structure: a mix of
// one of 64 topic centroids and noise, normalised.
func benchVector(r *rand.Rand, centroids [][]float32, dims int) []float32 {
	c := centroids[r.IntN(len(centroids))]
	v := make([]float32, dims)
	var ss float64
	for i := range v {
		v[i] = c[i] + 0.6*float32(r.NormFloat64())
		ss += float64(v[i]) * float64(v[i])
	}
	n := float32(math.Sqrt(ss))
	for i := range v {
		v[i] /= n
	}
	return v
}

func centroids(dims int) [][]float32 {
	r := rand.New(rand.NewPCG(42, 42))
	out := make([][]float32, 64)
	for i := range out {
		out[i] = make([]float32, dims)
		for j := range out[i] {
			out[i][j] = float32(r.NormFloat64())
		}
	}
	return out
}

// fixture returns the path of a migrated store with n single-chunk
// entities embedded at dims dimensions by model 1, built once.
func fixture(b testing.TB, n, dims int) string {
	b.Helper()
	fixtureMu.Lock()
	if keep := os.Getenv("POSTGRAM_SQLITE_FIXTURES"); keep != "" && fixtureDir == "" {
		// Reuse fixtures across runs from this directory (never removed).
		path := filepath.Join(keep, fmt.Sprintf("fixture-%d-%d.db", n, dims))
		fixtureMu.Unlock()
		if _, err := os.Stat(path); err != nil {
			if err := buildFixture(path, n, dims); err != nil {
				b.Fatal(err)
			}
		}
		return path
	}
	if fixtureDir == "" {
		d, err := os.MkdirTemp("", "postgram-sqlite-bench-")
		if err != nil {
			fixtureMu.Unlock()
			b.Fatal(err)
		}
		fixtureDir = d
	}
	path := filepath.Join(fixtureDir, fmt.Sprintf("fixture-%d-%d.db", n, dims))
	once := fixtureOnce[path]
	if once == nil {
		once = &sync.Once{}
		fixtureOnce[path] = once
	}
	fixtureMu.Unlock()
	var err error
	once.Do(func() { err = buildFixture(path, n, dims) })
	if err != nil {
		b.Fatal(err)
	}
	if _, statErr := os.Stat(path); statErr != nil {
		b.Fatal("fixture was not built")
	}
	return path
}

func buildFixture(path string, n, dims int) error {
	ctx := context.Background()
	start := time.Now()
	st, err := Open(ctx, Config{Path: path})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	model, err := st.EnsureModel(ctx, postgram.ModelInfo{Provider: "bench", Name: "bench", Dimensions: dims})
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(1, uint64(n)))
	z := rand.NewZipf(r, 1.1, 2, uint64(len(benchVocab)-1))
	cs := centroids(dims)
	const batch = 1000
	for lo := 0; lo < n; lo += batch {
		var ents []*postgram.Entity
		var chunks [][]preparedChunk
		var done []driver.EmbedResult
		for i := lo; i < min(n, lo+batch); i++ {
			content := benchContent(r, z, i)
			e := newEntity(content)
			e.Type = []postgram.EntityType{postgram.TypeMemory, postgram.TypeDocument, postgram.TypeTask}[i%3]
			ents = append(ents, e)
			cid := uuid.New()
			chunks = append(chunks, prepareChunks("default", []driver.ChunkInput{{ID: cid, Content: content, End: len(content)}}))
			done = append(done, driver.EmbedResult{EntityID: e.ID, Generation: 1, ChunkIDs: []uuid.UUID{cid},
				Vectors: [][]float32{benchVector(r, cs, dims)}})
		}
		err := st.write(ctx, func(tx *wtx) error {
			for i, e := range ents {
				var rid int64
				err := tx.QueryRowContext(ctx, `INSERT INTO entities (workspace_id, id, type, content, visibility, status,
					enrichment_status, extraction_status, created_at, updated_at) VALUES ('default', ?, ?, ?, 'shared', 'active', 'pending', 'skipped', ?, ?)
					RETURNING rid`, e.ID.String(), e.Type, e.Content, micros(e.CreatedAt), micros(e.UpdatedAt)).Scan(&rid)
				if err != nil {
					return err
				}
				if err := insertChunks(ctx, tx, "default", e.ID, rid, chunks[i]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := st.CompleteEmbedding(ctx, "default", model, done); err != nil {
			return err
		}
	}
	if _, err := st.w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "built fixture %s (%d chunks × %d dims) in %v\n", filepath.Base(path), n, dims, time.Since(start).Round(time.Millisecond))
	return nil
}

func openFixture(b testing.TB, n, dims int) *Store {
	b.Helper()
	path := fixture(b, n, dims)
	st, err := Open(context.Background(), Config{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	// A fixture kept (POSTGRAM_SQLITE_FIXTURES) from an older schema is
	// migrated as a user's file would be.
	if err := st.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkOpen50k opens a 50,000-chunk, 1,024-dimension store: schema
// checks and loading the whole vector index. It reports the Go heap and the
// process's resident memory with the last store open.
func BenchmarkOpen50k(b *testing.B) {
	path := fixture(b, 50_000, 1024)
	var heap, rss float64
	for b.Loop() {
		st, err := Open(context.Background(), Config{Path: path})
		if err != nil {
			b.Fatal(err)
		}
		if st.idx.count() != 50_000 {
			b.Fatalf("loaded %d vectors", st.idx.count())
		}
		b.StopTimer()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap, rss = float64(ms.HeapAlloc)/(1<<20), residentMiB()
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(heap, "heap-MiB")
	b.ReportMetric(rss, "rss-MiB")
}

// residentMiB reads VmRSS from /proc (0 elsewhere).
func residentMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func benchQueries(dims, n int) [][]float32 {
	r := rand.New(rand.NewPCG(9, 9))
	cs := centroids(dims)
	out := make([][]float32, n)
	for i := range out {
		out[i] = benchVector(r, cs, dims)
	}
	return out
}

func benchVectorSearch(b *testing.B, n int, f driver.EntityFilter) {
	st := openFixture(b, n, 1024)
	ctx := context.Background()
	qs := benchQueries(1024, 64)
	var lat []time.Duration
	i := 0
	for b.Loop() {
		t := time.Now()
		res, err := st.VectorSearch(ctx, "default", driver.VectorQuery{Filter: f, ModelID: 1, Vector: qs[i%len(qs)], Limit: 50,
			Strategy: postgram.StrategyAuto})
		lat = append(lat, time.Since(t))
		if err != nil || len(res.Hits) != 50 {
			b.Fatalf("%v, %d hits", err, len(res.Hits))
		}
		i++
	}
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	p := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(p(0.5), "p50-ms")
	b.ReportMetric(p(0.95), "p95-ms")
}

// BenchmarkVectorSearch10k ranks 10,000 chunks of 1,024 dimensions exactly.
func BenchmarkVectorSearch10k(b *testing.B) { benchVectorSearch(b, 10_000, driver.EntityFilter{}) }

// BenchmarkVectorSearch50k ranks 50,000 chunks of 1,024 dimensions exactly.
func BenchmarkVectorSearch50k(b *testing.B) { benchVectorSearch(b, 50_000, driver.EntityFilter{}) }

// BenchmarkVectorSearch50kFiltered ranks the third of them that are tasks.
func BenchmarkVectorSearch50kFiltered(b *testing.B) {
	benchVectorSearch(b, 50_000, driver.EntityFilter{Types: []postgram.EntityType{postgram.TypeTask}})
}

// BenchmarkKeywordProbe runs the probes of a typical query at 10,000 chunks:
// the conjunction, the union capped at 201, and per-term probes.
func BenchmarkKeywordProbe(b *testing.B) {
	st := openFixture(b, 10_000, 1024)
	ctx := context.Background()
	queries := [][]string{{"w3", "w17"}, {"PRJ-42"}, {"w1", "w250", "w4000"}, {"w12", "w13", "w14", "w15"}}
	vec := benchQueries(1024, 1)[0]
	modes := []driver.ProbeMode{driver.ProbeAll, driver.ProbeAny, driver.ProbeTerm}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		q := queries[i%len(queries)]
		t := time.Now()
		_, err := st.KeywordProbe(ctx, "default", driver.KeywordQuery{Terms: q, Mode: modes[i%3], Limit: 201, Vector: vec, ModelID: 1})
		lat = append(lat, time.Since(t))
		if err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportPercentiles(b, lat)
}

// BenchmarkHybridSearch50k is a whole library search (keyword pool, vector
// branch, fusion, hydration) over 50,000 chunks of 1,024 dimensions.
func BenchmarkHybridSearch50k(b *testing.B) {
	st := openFixture(b, 50_000, 1024)
	ctx := context.Background()
	qs := benchQueries(1024, 64)
	c, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: &fixedEmbedder{qs: qs}})
	if err != nil {
		b.Fatal(err)
	}
	texts := []string{"w3 w17 ticket", "PRJ-42", "w1 w250 w4000", "w12 w13 w14 w15", "chunk w99", "w7"}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		t := time.Now()
		r, err := c.Search(ctx, postgram.SearchRequest{Query: fmt.Sprintf("%s q%d", texts[i%len(texts)], i%64)})
		lat = append(lat, time.Since(t))
		if err != nil || len(r.Results) == 0 {
			b.Fatalf("%v %d", err, len(r.Results))
		}
		i++
	}
	reportPercentiles(b, lat)
}

// fixedEmbedder embeds a text by its "qN" word, from the fixture's queries.
type fixedEmbedder struct{ qs [][]float32 }

func (e *fixedEmbedder) Model() postgram.ModelInfo {
	return postgram.ModelInfo{Provider: "bench", Name: "bench", Dimensions: len(e.qs[0])}
}

func (e *fixedEmbedder) EmbedBatch(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		var n int
		if j := strings.LastIndex(t, " q"); j >= 0 {
			fmt.Sscanf(t[j+2:], "%d", &n)
		}
		out[i] = e.qs[n%len(e.qs)]
	}
	return out, nil
}
