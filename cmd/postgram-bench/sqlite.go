package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/storage/sqlite"
)

// sqliteOptions are the sqlite subcommand's flags.
type sqliteOptions struct {
	dir     string
	sizes   []int
	dims    int
	queries int
	rounds  int
	seed    uint64
	measure string // internal: measure this fixture in this process
	cpuProf string // CPU profile of the measuring process (open and searches)
}

func parseSQLiteFlags(args []string, stderr io.Writer) (sqliteOptions, int) {
	var o sqliteOptions
	var sizes string
	fs := newFlagSet("sqlite", `Measures the embedded SQLite store (storage/sqlite, the default without
DATABASE_URL). It builds one store per size (single-chunk entities of the
search fixture's prose, embedded by a deterministic stub: each text's vector
is one of 64 topic centroids plus noise, normalised) with direct library
calls, then, for each store, in a fresh child process: the time to open it
(schema checks and loading the in-memory vector index), the resident memory
(VmRSS) right after, and the latency of
  hybrid    Client.Search with the query embedding in the memory cache
            (every query is searched once before the measured rounds),
            i.e. what a user pays for a repeated or cached query;
  vector    the vector branch alone (Store.VectorSearch, 50 candidates,
            the library's default for limit 10);
  keyword   Client.Search without an embedder (the default configuration:
            keyword-only, degraded vector).
Fixtures go to --dir and are reused by later runs with the same flags;
without --dir they are built in a temporary directory and removed.`, stderr)
	fs.StringVar(&o.dir, "dir", "", "directory for the fixture stores (kept and reused; default: a temporary directory)")
	fs.StringVar(&sizes, "sizes", "10000,50000", "comma-separated chunk counts")
	fs.IntVar(&o.dims, "dims", 1024, "embedding dimensions")
	fs.IntVar(&o.queries, "queries", 200, "distinct queries per mode")
	fs.IntVar(&o.rounds, "rounds", 2, "measured passes over the queries")
	fs.Uint64Var(&o.seed, "seed", defaultSeed, "seed of the generated text, vectors and queries")
	fs.StringVar(&o.measure, "measure", "", "internal: measure the store at this path and print JSON")
	fs.StringVar(&o.cpuProf, "cpuprofile", "", "write a CPU profile of each measuring process (open and searches) to FILE.<chunks>")
	code := parseFlags(fs, args, func() error {
		for _, s := range strings.Split(sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 {
				return fmt.Errorf("--sizes: %q is not a positive integer", s)
			}
			o.sizes = append(o.sizes, n)
		}
		switch {
		case o.dims < 1 || o.dims > 16000:
			return errors.New("--dims must be between 1 and 16000")
		case o.queries < 1:
			return errors.New("--queries must be positive")
		case o.rounds < 1:
			return errors.New("--rounds must be positive")
		}
		return nil
	})
	return o, code
}

func runSQLite(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code := parseSQLiteFlags(args, stderr)
	if code >= 0 {
		return code
	}
	if o.measure != "" {
		m, err := measureSQLite(ctx, o, o.measure)
		if err != nil {
			fmt.Fprintln(stderr, "postgram-bench sqlite:", err)
			return exitError
		}
		if err := json.NewEncoder(stdout).Encode(m); err != nil {
			return exitError
		}
		return exitOK
	}
	if err := sqliteBench(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "postgram-bench sqlite:", err)
		return exitError
	}
	return exitOK
}

// sqliteMeasurement is what the child process reports for one store.
type sqliteMeasurement struct {
	Chunks    int     `json:"chunks"`
	FileBytes int64   `json:"file_bytes"`
	OpenMS    float64 `json:"open_ms"`
	RSSOpen   uint64  `json:"rss_open"`   // VmRSS after open, bytes
	HeapOpen  uint64  `json:"heap_open"`  // Go heap in use after open, bytes
	RSSAfter  uint64  `json:"rss_after"`  // VmRSS after all searches
	Hybrid    summary `json:"hybrid"`     // Client.Search, memory-cached query vector
	Vector    summary `json:"vector"`     // Store.VectorSearch
	Keyword   summary `json:"keyword"`    // Client.Search without embedder
	Empty     int     `json:"empty"`      // hybrid searches with no result
	Plans     string  `json:"plans"`      // vector plans seen
	Probes    string  `json:"probes"`     // keyword probes seen (hybrid)
	Degraded  int     `json:"degraded"`   // hybrid searches that reported a degradation
	Embedded  int     `json:"embedded"`   // chunks with an embedding
	QueryHits int     `json:"query_hits"` // hybrid searches answered from the memory cache
}

func sqliteBench(ctx context.Context, o sqliteOptions, stdout, stderr io.Writer) error {
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "postgram-bench-sqlite-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var results []sqliteMeasurement
	slices.Sort(o.sizes)
	o.sizes = slices.Compact(o.sizes)
	prev, prevN := "", 0
	for _, n := range o.sizes {
		path := filepath.Join(dir, fmt.Sprintf("sqlite-%d-%dd-s%d-v%d.db", n, o.dims, o.seed, fixtureVersion))
		if err := ensureSQLiteFixture(ctx, o, path, n, prev, prevN, stderr); err != nil {
			return fmt.Errorf("fixture of %d chunks: %w", n, err)
		}
		prev, prevN = path, n
		fmt.Fprintf(stderr, "measuring %s in a fresh process...\n", filepath.Base(path))
		cmd := osexec.CommandContext(ctx, exe, "sqlite", "--measure", path, "--dims", strconv.Itoa(o.dims),
			"--queries", strconv.Itoa(o.queries), "--rounds", strconv.Itoa(o.rounds), "--seed", strconv.FormatUint(o.seed, 10))
		if o.cpuProf != "" {
			cmd.Args = append(cmd.Args, "--cpuprofile", o.cpuProf+"."+strconv.Itoa(n))
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("measure %s: %w", path, err)
		}
		var m sqliteMeasurement
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			return fmt.Errorf("measure %s: %w: %s", path, err, out.String())
		}
		results = append(results, m)
	}
	t := newTable(fmt.Sprintf("SQLite (embedded default), %d dims, %d queries × %d rounds per mode, limit 10, times in ms", o.dims, o.queries, o.rounds),
		"chunks", "file", "open", "RSS after open", "Go heap", "hybrid p50", "hybrid p95", "vector p50", "vector p95", "keyword p50", "keyword p95")
	for _, m := range results {
		t.add(strconv.Itoa(m.Chunks), mib(uint64(m.FileBytes)), msf(m.OpenMS), mib(m.RSSOpen), mib(m.HeapOpen),
			ms(m.Hybrid.P50), ms(m.Hybrid.P95), ms(m.Vector.P50), ms(m.Vector.P95), ms(m.Keyword.P50), ms(m.Keyword.P95))
	}
	if err := t.write(stdout); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	for _, m := range results {
		fmt.Fprintf(stdout, "%d chunks: vector plans %s; hybrid keyword probes %s; %d/%d hybrid searches from the memory cache, %d empty, %d degraded; RSS after searching %s\n",
			m.Chunks, m.Plans, m.Probes, m.QueryHits, m.Hybrid.N, m.Empty, m.Degraded, mib(m.RSSAfter))
	}
	if len(results) > 0 {
		last := results[len(results)-1]
		verdict := func(ok bool) string {
			if ok {
				return "met"
			}
			return "NOT met"
		}
		fmt.Fprintf(stdout, "targets at %d chunks: hybrid p95 %s ms (≤ 20: %s), open %s ms (≤ 1000: %s)\n", last.Chunks,
			ms(last.Hybrid.P95), verdict(last.Hybrid.P95 <= 20*time.Millisecond), msf(last.OpenMS), verdict(last.OpenMS <= 1000))
	}
	return nil
}

// ensureSQLiteFixture builds the store at path unless a complete one is
// there already. A smaller fixture (from, of fromN chunks; "" for none) of
// the same seed holds the same first fromN entities: it is copied and
// extended.
func ensureSQLiteFixture(ctx context.Context, o sqliteOptions, path string, n int, from string, fromN int, stderr io.Writer) error {
	if _, err := os.Stat(path); err == nil {
		st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		if err == nil {
			// A fixture of an older schema is migrated as a user's file
			// would be, so the measuring process finds it current.
			err = st.Migrate(ctx)
			s, serr := st.Stats(ctx, postgram.DefaultWorkspace)
			st.Close()
			if err == nil && serr == nil && s.Chunks == n && s.EmbeddedChunks == n {
				fmt.Fprintf(stderr, "reusing %s\n", path)
				return nil
			}
		}
		fmt.Fprintf(stderr, "%s is incomplete; rebuilding it\n", path)
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(path + suffix)
		}
	}
	start := time.Now()
	first := 0
	if from != "" {
		if err := copyFile(from, path); err != nil {
			return err
		}
		first = fromN
	}
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: newCentroidEmbedder(o.dims, o.seed),
		Worker: postgram.WorkerConfig{ClaimBatch: 256, EmbedBatch: 256}})
	if err != nil {
		return err
	}
	f, err := NewFixture(o.seed, n, n, 0)
	if err != nil {
		return err
	}
	err = parallel(ctx, runtime.GOMAXPROCS(0)+1, n-first, func(ctx context.Context, i int) error {
		_, err := c.Store(ctx, f.Entity(first+i))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	stored := time.Since(start)
	if _, err := operator(c).EnrichPending(ctx); err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	s, err := st.Stats(ctx, postgram.DefaultWorkspace)
	if err != nil {
		return err
	}
	if s.Chunks != n || s.EmbeddedChunks != n {
		return fmt.Errorf("built %d chunks, %d embedded; want %d", s.Chunks, s.EmbeddedChunks, n)
	}
	copied := ""
	if first > 0 {
		copied = fmt.Sprintf(" (the first %d copied from the smaller fixture)", first)
	}
	fmt.Fprintf(stderr, "built %s: %d chunks stored in %v%s, embedded in %v\n", filepath.Base(path), n,
		stored.Round(time.Millisecond), copied, (time.Since(start) - stored).Round(time.Millisecond))
	return nil
}

// copyFile copies a closed SQLite database (no write-ahead log left).
func copyFile(from, to string) error {
	if _, err := os.Stat(from + "-wal"); err == nil {
		return fmt.Errorf("%s still has a write-ahead log; is it open elsewhere?", from)
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// measureSQLite opens the store at path and measures it (run in a child
// process, so that resident memory is the store's, not the build's).
func measureSQLite(ctx context.Context, o sqliteOptions, path string) (sqliteMeasurement, error) {
	var m sqliteMeasurement
	fi, err := os.Stat(path)
	if err != nil {
		return m, err
	}
	m.FileBytes = fi.Size()
	if o.cpuProf != "" {
		f, err := os.Create(o.cpuProf)
		if err != nil {
			return m, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return m, err
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		return m, err
	}
	m.OpenMS = float64(time.Since(start)) / float64(time.Millisecond)
	defer st.Close()
	runtime.GC()
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	m.HeapOpen = mem.HeapAlloc
	m.RSSOpen = residentBytes()

	s, err := st.Stats(ctx, postgram.DefaultWorkspace)
	if err != nil {
		return m, err
	}
	m.Chunks, m.Embedded = s.Chunks, s.EmbeddedChunks
	modelID, _, ok, err := st.ActiveModel(ctx)
	if err != nil || !ok {
		return m, fmt.Errorf("the fixture has no active model: %v", err)
	}
	emb := newCentroidEmbedder(o.dims, o.seed)
	hybrid, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: emb,
		QueryCache: postgram.QueryCacheConfig{Size: max(512, 2*o.queries)}})
	if err != nil {
		return m, err
	}
	keyword, err := postgram.New(ctx, postgram.Config{Store: st})
	if err != nil {
		return m, err
	}
	f, err := NewFixture(o.seed, 1, 1, 0)
	if err != nil {
		return m, err
	}
	qg := newQueryGen(f.Vocab, o.seed)
	queries := make([]string, o.queries)
	vecs := make([][]float32, o.queries)
	for i := range queries {
		queries[i] = qg.unique(qg.short)
		v, err := emb.EmbedBatch(ctx, queries[i:i+1])
		if err != nil {
			return m, err
		}
		vecs[i] = v[0]
	}
	// Warm the memory cache (and SQLite's page cache) with one pass.
	for _, q := range queries {
		if _, err := hybrid.Search(ctx, postgram.SearchRequest{Query: q}); err != nil {
			return m, err
		}
	}
	plans, probes := counter{}, counter{}
	var hyb, vec, kw []time.Duration
	for range o.rounds {
		for i, q := range queries {
			t := time.Now()
			r, err := hybrid.Search(ctx, postgram.SearchRequest{Query: q})
			hyb = append(hyb, time.Since(t))
			if err != nil {
				return m, err
			}
			if len(r.Results) == 0 {
				m.Empty++
			}
			if len(r.Degraded) > 0 {
				m.Degraded++
			}
			if r.Stats.QueryEmbedding == postgram.FromMemoryCache {
				m.QueryHits++
			}
			probes[r.Stats.KeywordProbe]++

			t = time.Now()
			vr, err := st.VectorSearch(ctx, postgram.DefaultWorkspace, driver.VectorQuery{ModelID: modelID, Vector: vecs[i],
				Limit: 50, Strategy: postgram.StrategyAuto})
			vec = append(vec, time.Since(t))
			if err != nil {
				return m, err
			}
			plans[vr.Plan]++

			t = time.Now()
			_, err = keyword.Search(ctx, postgram.SearchRequest{Query: q})
			kw = append(kw, time.Since(t))
			if err != nil {
				return m, err
			}
		}
	}
	m.Hybrid, m.Vector, m.Keyword = summarize(hyb), summarize(vec), summarize(kw)
	m.Plans, m.Probes = plans.String(), probes.String()
	m.RSSAfter = residentBytes()
	return m, nil
}

// residentBytes reads VmRSS from /proc/self/status (0 where there is none).
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// centroidEmbedder is a deterministic embedder with the structure of real
// embeddings: a text's vector is one of 64 topic centroids plus Gaussian
// noise, normalised, both chosen by a hash of the text.
type centroidEmbedder struct {
	dims int
	seed uint64
	cs   [][]float32
}

func newCentroidEmbedder(dims int, seed uint64) *centroidEmbedder {
	r := rand.New(rand.NewPCG(seed, 0x63656e74))
	cs := make([][]float32, 64)
	for i := range cs {
		cs[i] = make([]float32, dims)
		for j := range cs[i] {
			cs[i][j] = float32(r.NormFloat64())
		}
	}
	return &centroidEmbedder{dims: dims, seed: seed, cs: cs}
}

func (e *centroidEmbedder) Model() postgram.ModelInfo {
	return postgram.ModelInfo{Provider: "bench", Name: "centroid-noise", Dimensions: e.dims}
}

func (e *centroidEmbedder) EmbedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		h.Write([]byte(t))
		r := rand.New(rand.NewPCG(h.Sum64(), e.seed))
		c := e.cs[r.IntN(len(e.cs))]
		v := make([]float32, e.dims)
		var ss float64
		for j := range v {
			v[j] = c[j] + 0.6*float32(r.NormFloat64())
			ss += float64(v[j]) * float64(v[j])
		}
		n := float32(math.Sqrt(ss))
		for j := range v {
			v[j] /= n
		}
		out[i] = v
	}
	return out, ctx.Err()
}
