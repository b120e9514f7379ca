package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/query"
	"github.com/postgram-go/postgram/internal/rank"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
)

// searchLimit is the result count of every benchmark search.
const searchLimit = 10

// vectorTarget mirrors the client's vector candidate count for searchLimit
// with the default SearchConfig: min(KeywordPoolSize, max(50, 5 × limit)).
const vectorTarget = 50

// memorySetSize is how many distinct queries the memory-cache profile repeats.
const memorySetSize = 10

// workspace is the workspace every benchmark client uses.
const workspace = postgram.DefaultWorkspace

// searchOptions are the search subcommand's flags.
type searchOptions struct {
	databaseURL    string
	schema         string
	reset          bool
	entities       int
	chunks         int
	dims           int
	delay          time.Duration
	queries        int
	warmup         int
	narrow         int
	seed           uint64
	maxConns       int
	efSearch       int
	buildWriters   int
	buildEnrichers int
	buildIndexMem  int // MiB of maintenance_work_mem for the HNSW build
	explainFull    bool
	stages         bool
	cpuProfile     string
	ranking        string
	weights        *postgram.RankingWeights
	noExplain      bool
	only           string
	recall         int
	recallEf       []int // --recall-ef: ef_search values the recall is measured at (float HNSW)
	recallRerank   []int // --recall-rerank: rerank candidate counts the recall is measured at (binary index)
	vectorIndex    string
	memIndex       bool
	memHalf        bool
	memCandidates  int
	targets        bool
	targetMS       float64
	assert         bool
}

func parseSearchFlags(args []string, stderr io.Writer) (searchOptions, int) {
	var o searchOptions
	fs := newFlagSet("search", `Builds (or reuses) a synthetic fixture in its own schema, then runs six search
profiles one query at a time and prints wall-clock percentiles, the same with
the time inside the stub provider removed (its delay and its own hashing of the
text), provider calls, the vector plans and keyword
probes seen, and an EXPLAIN (ANALYZE, BUFFERS) summary of the underlying SQL.`, stderr)
	fs.StringVar(&o.databaseURL, "database-url", defaultDatabaseURL(), "PostgreSQL URL (default $DATABASE_URL, else the loopback test cluster)")
	fs.StringVar(&o.schema, "schema", "postgram_bench", "schema holding the fixture (created if missing; connected with search_path=<schema>,public)")
	fs.BoolVar(&o.reset, "reset", false, "drop and recreate the schema, rebuilding the fixture")
	fs.IntVar(&o.entities, "entities", 5000, "entities in the fixture")
	fs.IntVar(&o.chunks, "chunks", 6000, "total chunks: chunks-entities entities get two chunks, the rest one (entities <= chunks <= 2×entities)")
	fs.IntVar(&o.dims, "dims", 1536, "embedding dimensions")
	fs.DurationVar(&o.delay, "delay", 20*time.Millisecond, "stub embedder delay per provider call during the profiles")
	fs.IntVar(&o.queries, "queries", 200, "measured queries per profile")
	fs.IntVar(&o.warmup, "warmup", 20, "warm-up queries per profile (not measured)")
	fs.IntVar(&o.narrow, "narrow", 30, "one-chunk entities tagged narrow for the underfilled HNSW profile (must give fewer chunks than the 50-chunk vector target)")
	fs.Uint64Var(&o.seed, "seed", defaultSeed, "seed of the vocabulary, texts and queries")
	fs.IntVar(&o.maxConns, "max-conns", 10, "PostgreSQL pool size")
	fs.IntVar(&o.efSearch, "ef-search", 0, "hnsw.ef_search of ANN scans (default: the store's, postgres.Config.EfSearch)")
	fs.IntVar(&o.buildWriters, "build-writers", 8, "concurrent Client.Store goroutines while building the fixture")
	fs.IntVar(&o.buildEnrichers, "build-enrichers", 1, "concurrent EnrichPending calls while building the fixture")
	fs.IntVar(&o.buildIndexMem, "build-index-mem", 2048, "MiB of maintenance_work_mem for building the HNSW index once (a graph that does not fit is built far slower: about chunks × (dims × 4 + 300) bytes)")
	fs.BoolVar(&o.explainFull, "explain-full", false, "also print the full EXPLAIN (ANALYZE, BUFFERS) output")
	fs.BoolVar(&o.noExplain, "no-explain", false, "skip the EXPLAIN summaries")
	fs.StringVar(&o.ranking, "ranking", "v2", "ranking of the measured searches (v2, seed)")
	weights := fs.String("weights", "", "ranking v2 weights to change from the defaults, e.g. head_candidates=0 (names as in postgram.RankingWeights' JSON)")
	fs.BoolVar(&o.stages, "stages", false, "also time every storage call of the measured searches and print a table per profile")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the profiles' searches (warm-up and measured) to this file")
	fs.StringVar(&o.only, "profiles", "", "comma-separated profile names to run (default all six)")
	fs.BoolVar(&o.targets, "targets", false, "print whether each profile's p95 excluding the time inside the (stub) provider meets --target-ms")
	fs.Float64Var(&o.targetMS, "target-ms", 10, "latency target for --targets, in milliseconds")
	fs.IntVar(&o.recall, "recall", 0, "also measure the vector branch's recall@10 against exact ranking over this many unique queries (each exact ranking scans every vector)")
	recallEf := fs.String("recall-ef", "", "with --recall: measure recall with the float HNSW index at each of these hnsw.ef_search values, e.g. 40,100,200,400 (one exact ranking per query serves every setting)")
	recallRerank := fs.String("recall-rerank", "", "with --recall: measure recall with the binary index at each of these rerank candidate counts, e.g. 100,200,400,1000")
	fs.StringVar(&o.vectorIndex, "vector-index", "hnsw", "vector index the searches use (hnsw, binary, none: postgres.Config.VectorIndex); the fixture gets it if missing (none drops it)")
	fs.BoolVar(&o.memIndex, "memory-index", false, "search on the store's in-process index of vectors and keywords (postgres.Config.MemoryIndex), loaded before the profiles run")
	fs.BoolVar(&o.memHalf, "memory-index-half", false, "with --memory-index: keep its vectors in half precision (postgres.Config.MemoryIndexHalf)")
	fs.IntVar(&o.memCandidates, "memory-index-candidates", 0, "with --memory-index: rank exactly only this many sign-code candidates per vector search (postgres.Config.MemoryIndexCandidates; 0: exact)")
	fs.BoolVar(&o.assert, "assert", false, "with --targets (implied): exit with status 3 when a profile misses the target")
	code := parseFlags(fs, args, func() error {
		switch {
		case o.entities < 1:
			return errors.New("--entities must be positive")
		case o.chunks < o.entities || o.chunks > 2*o.entities:
			return fmt.Errorf("--chunks must be between --entities (%d) and twice that (%d)", o.entities, 2*o.entities)
		case o.dims < 1 || o.dims > 16000:
			return errors.New("--dims must be between 1 and 16000")
		case o.delay < 0:
			return errors.New("--delay must not be negative")
		case o.queries < 1:
			return errors.New("--queries must be positive")
		case o.warmup < 0:
			return errors.New("--warmup must not be negative")
		case o.narrow < 1 || o.narrow >= vectorTarget:
			return fmt.Errorf("--narrow must be between 1 and %d", vectorTarget-1)
		case o.seed > 1<<62:
			return errors.New("--seed must be below 2^62")
		case o.maxConns < 1 || o.buildWriters < 1 || o.buildEnrichers < 1:
			return errors.New("--max-conns, --build-writers and --build-enrichers must be positive")
		case o.buildIndexMem < 64 || o.buildIndexMem > 64<<10:
			return errors.New("--build-index-mem must be between 64 and 65536 MiB")
		case !(o.targetMS > 0):
			return errors.New("--target-ms must be positive")
		case (o.memHalf || o.memCandidates != 0) && !o.memIndex:
			return errors.New("--memory-index-half and --memory-index-candidates need --memory-index")
		case o.memCandidates < 0:
			return errors.New("--memory-index-candidates must not be negative")
		case !postgram.RankingMode(o.ranking).Valid():
			return fmt.Errorf("--ranking must be v2 or seed, not %q", o.ranking)
		}
		list := func(flag, v string, lo, hi int) ([]int, error) {
			var out []int
			for _, f := range strings.Split(v, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || n < lo || n > hi {
					return nil, fmt.Errorf("--%s: %q is not a number between %d and %d", flag, f, lo, hi)
				}
				out = append(out, n)
			}
			if o.recall < 1 {
				return nil, fmt.Errorf("--%s needs --recall", flag)
			}
			return out, nil
		}
		var err error
		if *recallEf != "" {
			if o.recallEf, err = list("recall-ef", *recallEf, 1, 1000); err != nil {
				return err
			}
		}
		if *recallRerank != "" {
			if o.recallRerank, err = list("recall-rerank", *recallRerank, 10, 1000); err != nil {
				return err
			}
		}
		if !postgres.VectorIndexKind(o.vectorIndex).Valid() {
			return fmt.Errorf("--vector-index must be hnsw, binary or none, not %q", o.vectorIndex)
		}
		if *weights != "" {
			w, err := parseWeights(*weights)
			if err != nil {
				return fmt.Errorf("--weights: %w", err)
			}
			o.weights = w
		}
		if o.entities-(o.chunks-o.entities) < o.narrow {
			return fmt.Errorf("need at least --narrow (%d) one-chunk entities; lower --chunks", o.narrow)
		}
		return checkSchemaName(o.schema)
	})
	if o.assert {
		o.targets = true
	}
	return o, code
}

// runSearch is the search subcommand.
func runSearch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code := parseSearchFlags(args, stderr)
	if code >= 0 {
		return code
	}
	b := &searchBench{o: o, out: stdout, log: stderr, start: time.Now()}
	code, err := b.run(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "postgram-bench search: %v\n", err)
		return exitError
	}
	return code
}

// searchBench holds one search run's state.
type searchBench struct {
	o     searchOptions
	out   io.Writer // tables
	log   io.Writer // progress
	start time.Time

	dsn     string // the fixture's URL (search_path set)
	st      *postgres.Store
	staged  *stagedStore // with --stages: the measured clients' store
	fx      *Fixture
	emb     *postgramtest.Embedder
	timed   *timedEmbedder // emb, timed: what the measured clients call
	client  *postgram.Client
	modelID int64
}

func (b *searchBench) logf(format string, args ...any) { logf(b.log, b.start, format, args...) }

func (b *searchBench) run(ctx context.Context) (int, error) {
	o := b.o
	dsn, err := dsnWithSearchPath(o.databaseURL, o.schema)
	if err != nil {
		return 0, err
	}
	b.dsn = dsn
	b.st, err = postgres.Open(ctx, postgres.Config{URL: dsn, MaxConns: int32(o.maxConns), EfSearch: o.efSearch,
		VectorIndex: postgres.VectorIndexKind(o.vectorIndex), MemoryIndex: o.memIndex, MemoryIndexHalf: o.memHalf,
		MemoryIndexCandidates: o.memCandidates})
	if err != nil {
		return 0, err
	}
	defer b.st.Close()
	b.fx, err = NewFixture(o.seed, o.entities, o.chunks, o.narrow)
	if err != nil {
		return 0, err
	}

	fmt.Fprintf(b.out, "postgram-bench search\n")
	fmt.Fprintf(b.out, "  database  %s\n", redact(dsn))
	fmt.Fprintf(b.out, "  server    %s\n", serverInfo(ctx, b.st))
	fmt.Fprintf(b.out, "  client    %s %s/%s, GOMAXPROCS=%d, NumCPU=%d, pool max_conns=%d\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(), o.maxConns)
	fmt.Fprintf(b.out, "  library   %s\n", buildInfo())
	fmt.Fprintf(b.out, "  fixture   schema %s: %d entities, %d chunks, %d dims, seed %d, vocabulary %d words, %d narrow\n",
		o.schema, o.entities, o.chunks, o.dims, o.seed, b.fx.Vocab.Size(), b.fx.NarrowCount())
	fmt.Fprintf(b.out, "  profiles  %d warm-up + %d measured queries each, sequential, limit %d, stub delay %s per provider call, ranking %s\n",
		o.warmup, o.queries, searchLimit, o.delay, o.ranking)

	if err := b.ensureFixture(ctx); err != nil {
		return 0, err
	}
	if o.memIndex {
		before := liveHeap()
		t0 := time.Now()
		if err := b.st.WarmMemoryIndex(ctx, postgram.DefaultWorkspace); err != nil {
			return 0, err
		}
		st, _ := b.st.MemoryIndexStatus(postgram.DefaultWorkspace)
		took := time.Since(t0).Round(time.Millisecond)
		b.logf("in-memory index loaded in %s: %d entities, %d chunks, %d vectors (%.0f MiB of vector arrays, half precision %v); live Go heap grew by %.0f MiB; peak RSS %s",
			took, st.Entities, st.Chunks, st.Vectors, float64(st.VectorBytes)/(1<<20), o.memHalf, float64(liveHeap()-before)/(1<<20), peakRSS())
	}

	// A fresh embedder (call counter at zero) and client (empty LRU) for
	// the measurements; the persisted cache is emptied so that "unique"
	// queries are never answered from an earlier run.
	b.emb = postgramtest.NewEmbedder(o.dims)
	b.timed = &timedEmbedder{Embedder: b.emb}
	b.client, err = postgram.New(ctx, postgram.Config{Store: b.searchStore(), Embedder: b.timed,
		Search: postgram.SearchConfig{Ranking: postgram.RankingMode(o.ranking), Weights: o.weights}})
	if err != nil {
		return 0, err
	}
	id, _, ok, err := b.st.ActiveModel(ctx)
	if err != nil || !ok {
		return 0, fmt.Errorf("no active embedding model (err %v)", err)
	}
	b.modelID = id
	if err := exec(ctx, b.st, "TRUNCATE query_embeddings"); err != nil {
		return 0, fmt.Errorf("empty the persisted query cache: %w", err)
	}
	b.emb.SetDelay(o.delay)

	profiles, err := b.profiles(ctx)
	if err != nil {
		return 0, err
	}
	run := profiles
	if o.only != "" {
		var keep []searchProfile
		for _, p := range profiles {
			if slices.Contains(strings.Split(o.only, ","), p.name) {
				keep = append(keep, p)
			}
		}
		if len(keep) == 0 {
			return 0, fmt.Errorf("--profiles %q names no profile", o.only)
		}
		run = keep
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return 0, err
		}
		defer pprof.StopCPUProfile() // an error return; a second stop does nothing
	}
	results := make([]*profileResult, 0, len(run))
	for _, p := range run {
		b.logf("profile %s: %d warm-up + %d measured", p.name, len(p.warmup), len(p.measure))
		r, err := b.runProfile(ctx, p)
		if err != nil {
			return 0, fmt.Errorf("profile %s: %w", p.name, err)
		}
		results = append(results, r)
	}
	if o.cpuProfile != "" {
		pprof.StopCPUProfile() // the explain and recall steps are not searches
	}
	b.emb.SetDelay(0)
	if err := b.printResults(results); err != nil {
		return 0, err
	}
	if !o.noExplain {
		if err := b.explain(ctx, profiles); err != nil {
			return 0, err
		}
	}
	if o.recall > 0 {
		if err := b.recall(ctx, profiles); err != nil {
			return 0, err
		}
	}

	code := exitOK
	if o.targets {
		if missed := b.printTargets(results); missed && o.assert {
			code = exitTarget
		}
	}
	failed := 0
	for _, r := range results {
		failed += r.checkFailures
	}
	printFooter(b.out, b.start)
	if failed > 0 {
		return 0, fmt.Errorf("verification failed for %d searches (see the check column)", failed)
	}
	return code, nil
}

// ensureFixture reuses the schema's fixture when bench_meta matches the
// flags, and otherwise (re)builds it.
func (b *searchBench) ensureFixture(ctx context.Context) error {
	o := b.o
	if err := prepareSchema(ctx, b.st, o.schema, o.reset); err != nil {
		return err
	}
	meta, err := readMeta(ctx, b.st, o.schema)
	if err != nil {
		return err
	}
	if meta == nil {
		// Refuse to drop a schema this command did not create.
		if n, err := schemaTables(ctx, b.st, o.schema); err != nil {
			return err
		} else if n > 0 {
			return fmt.Errorf("schema %s has %d tables but no complete fixture (no bench_meta row); pass --reset to drop and rebuild it", o.schema, n)
		}
	}
	// SchemaVersion creates the (empty) version table when it is missing,
	// so it runs only after the check above.
	_, latest, err := b.st.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("read migration versions: %w", err)
	}
	want := benchMeta{Version: fixtureVersion, Entities: o.entities, Chunks: o.chunks, Dims: o.dims, Seed: int64(o.seed), Migration: latest}
	var status string
	switch {
	case meta != nil && meta.matches(want):
		status = fmt.Sprintf("reused the fixture built %s (build took %.1fs, migration %d)",
			meta.BuiltAt.Local().Format(time.DateTime), meta.BuildSeconds, meta.Migration)
		b.logf("%s", status)
		if err := b.st.Migrate(ctx); err != nil { // nothing to do: the versions match
			return err
		}
	default:
		if meta != nil {
			b.logf("schema %s holds a different fixture (%d entities, %d chunks, %d dims, seed %d, fixture version %d, migration %d); rebuilding",
				o.schema, meta.Entities, meta.Chunks, meta.Dims, meta.Seed, meta.Version, meta.Migration)
		}
		if err := dropSchema(ctx, b.st, o.schema); err != nil {
			return err
		}
		if err := prepareSchema(ctx, b.st, o.schema, false); err != nil {
			return err
		}
		if err := b.st.Migrate(ctx); err != nil {
			return err
		}
		t0 := time.Now()
		if err := b.build(ctx); err != nil {
			return fmt.Errorf("build fixture: %w", err)
		}
		want.BuiltAt = time.Now()
		want.BuildSeconds = time.Since(t0).Seconds()
		if err := writeMeta(ctx, b.st, o.schema, want); err != nil {
			return err
		}
		status = fmt.Sprintf("built in %.1fs (migration %d)", want.BuildSeconds, want.Migration)
	}

	c, err := countFixture(ctx, b.st, workspace)
	if err != nil {
		return err
	}
	sizes, err := relationSizes(ctx, b.st, o.schema)
	if err != nil {
		return err
	}
	t := newTable("fixture", "item", "expected", "actual", "note")
	note := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "MISMATCH"
	}
	t.add("entities", fmt.Sprint(o.entities), fmt.Sprint(c.Entities), note(c.Entities == o.entities))
	t.add("chunks", fmt.Sprint(o.chunks), fmt.Sprint(c.Chunks), note(c.Chunks == o.chunks))
	t.add("embedded chunks", fmt.Sprint(o.chunks), fmt.Sprint(c.Embedded), note(c.Embedded == o.chunks))
	t.add("narrow entities", fmt.Sprint(b.fx.NarrowCount()), fmt.Sprint(c.NarrowEntities), note(c.NarrowEntities == b.fx.NarrowCount()))
	t.add("narrow chunks", fmt.Sprintf("< %d", vectorTarget), fmt.Sprint(c.NarrowChunks), note(c.NarrowChunks < vectorTarget))
	if err := t.write(b.out); err != nil {
		return err
	}
	fmt.Fprintf(b.out, "  fixture: %s\n  sizes:   %s\n", status, sizes)
	if c.Entities != o.entities || c.Chunks != o.chunks || c.Embedded != o.chunks {
		return fmt.Errorf("the fixture does not match the flags (see the table); rerun with --reset")
	}
	return nil
}

// build stores the fixture through Client.Store from buildWriters
// goroutines, embeds it with buildEnrichers concurrent EnrichPending calls
// (zero-delay stub) and analyzes the tables.
func (b *searchBench) build(ctx context.Context) error {
	o := b.o
	emb := postgramtest.NewEmbedder(o.dims)
	emb.SetDelay(0)
	c, err := postgram.New(ctx, postgram.Config{Store: b.st, Embedder: emb})
	if err != nil {
		return err
	}
	var stored atomic.Int64
	t0 := time.Now()
	b.logf("build: storing %d entities with %d goroutines", o.entities, o.buildWriters)
	stop := ticker(10*time.Second, func() {
		n := stored.Load()
		b.logf("build: stored %d/%d entities (%.0f/s)", n, o.entities, rate(int(n), time.Since(t0)))
	})
	err = parallel(ctx, o.buildWriters, o.entities, func(ctx context.Context, i int) error {
		if _, err := c.Store(ctx, b.fx.Entity(i)); err != nil {
			return fmt.Errorf("store entity %d: %w", i, err)
		}
		stored.Add(1)
		return nil
	})
	stop()
	if err != nil {
		return err
	}
	b.logf("build: stored %d entities in %s", o.entities, time.Since(t0).Round(time.Millisecond))

	// Inserting into HNSW one vector at a time is most of a large
	// fixture's build; like a bulk import, embed without the index and
	// build it once afterwards.
	indexes, err := dropVectorIndexes(ctx, b.st)
	if err != nil {
		return err
	}
	t1 := time.Now()
	b.logf("build: embedding with %d concurrent EnrichPending calls (%d HNSW indexes dropped until done)", o.buildEnrichers, len(indexes))
	var chunks atomic.Int64
	stop = ticker(10*time.Second, func() {
		qs, err := c.QueueStatus(ctx, 0)
		if err == nil {
			b.logf("build: embedded %d/%d entities", qs.Embedding.Completed, o.entities)
		}
	})
	err = parallel(ctx, o.buildEnrichers, o.buildEnrichers, func(ctx context.Context, _ int) error {
		st, err := operator(c).EnrichPending(ctx)
		chunks.Add(int64(st.Chunks))
		return err
	})
	stop()
	if err != nil {
		return err
	}
	if err := checkQueueDone(ctx, c); err != nil {
		return err
	}
	el := time.Since(t1)
	b.logf("build: embedded %d chunks in %s (%.0f chunks/s)", chunks.Load(), el.Round(time.Millisecond), rate(int(chunks.Load()), el))
	t2 := time.Now()
	if err := createIndexes(ctx, b.st, indexes, o.buildIndexMem); err != nil {
		return err
	}
	b.logf("build: rebuilt %d HNSW indexes in %s", len(indexes), time.Since(t2).Round(time.Millisecond))
	if err := analyze(ctx, b.st, o.schema); err != nil {
		return err
	}
	b.logf("build: analyzed")
	return nil
}

// searchProfile is one latency profile: the requests to run and what every
// response must satisfy.
type searchProfile struct {
	name    string
	client  *postgram.Client
	prepare func(ctx context.Context) error // unmeasured set-up, before the warm-up
	warmup  []postgram.SearchRequest
	measure []postgram.SearchRequest
	check   func(*postgram.SearchResponse) error
}

// profileResult is a profile's measurements.
type profileResult struct {
	name          string
	wall, excl    []time.Duration
	calls         int64
	plans, probes counter
	sources       counter
	results       int // total results returned
	checkFailures int
	firstFailure  string
	stages        map[string][]time.Duration // with --stages
}

func requests(n int, gen func() string, tmpl postgram.SearchRequest) []postgram.SearchRequest {
	out := make([]postgram.SearchRequest, n)
	for i := range out {
		out[i] = tmpl
		out[i].Query = gen()
	}
	return out
}

// profiles builds the six profiles. Queries are deterministic (seeded) and
// unique across the run unless a profile repeats them on purpose.
func (b *searchBench) profiles(ctx context.Context) ([]searchProfile, error) {
	o := b.o
	qg := newQueryGen(b.fx.Vocab, o.seed+1)
	base := postgram.SearchRequest{Limit: searchLimit}
	short := func() string { return qg.unique(qg.short) }
	wantSource := func(want postgram.QueryEmbeddingSource) func(*postgram.SearchResponse) error {
		return func(r *postgram.SearchResponse) error {
			if r.Stats.QueryEmbedding != want {
				return fmt.Errorf("query embedding from %q, want %q", r.Stats.QueryEmbedding, want)
			}
			return nil
		}
	}
	var ps []searchProfile

	// 1. Every query new: one provider call each.
	ps = append(ps, searchProfile{
		name: "cold_unique_queries", client: b.client,
		warmup: requests(o.warmup, short, base), measure: requests(o.queries, short, base),
		check: wantSource(postgram.FromProvider),
	})

	// 2. A few queries repeated: the in-process LRU answers.
	set := requests(memorySetSize, short, base)
	cycle := func(n int) []postgram.SearchRequest {
		out := make([]postgram.SearchRequest, n)
		for i := range out {
			out[i] = set[i%len(set)]
		}
		return out
	}
	ps = append(ps, searchProfile{
		name: "memory_cache_hit", client: b.client,
		prepare: func(ctx context.Context) error { return b.searchAll(ctx, b.client, set) },
		warmup:  cycle(o.warmup), measure: cycle(o.queries),
		check: wantSource(postgram.FromMemoryCache),
	})

	// 3. Queries persisted by a first run, then searched by a client whose
	// LRU is disabled: the store's cache answers.
	noLRU, err := postgram.New(ctx, postgram.Config{Store: b.searchStore(), Embedder: b.timed,
		QueryCache: postgram.QueryCacheConfig{Size: -1}, Search: postgram.SearchConfig{Ranking: postgram.RankingMode(o.ranking), Weights: o.weights}})
	if err != nil {
		return nil, err
	}
	dbWarm, dbMeasure := requests(o.warmup, short, base), requests(o.queries, short, base)
	ps = append(ps, searchProfile{
		name: "database_cache_hit", client: noLRU,
		prepare: func(ctx context.Context) error {
			// Persisting is not what is measured: skip the stub delay.
			b.emb.SetDelay(0)
			defer b.emb.SetDelay(o.delay)
			return b.searchAll(ctx, b.client, append(append([]postgram.SearchRequest{}, dbWarm...), dbMeasure...))
		},
		warmup: dbWarm, measure: dbMeasure,
		check: wantSource(postgram.FromStoreCache),
	})

	// 4. ~12 common words: the conjunction rarely fills the keyword pool,
	// so the OR and per-term probes run.
	long := func() string { return qg.unique(func() string { return qg.commonWords(12, 60) }) }
	ps = append(ps, searchProfile{
		name: "long_keyword_query", client: b.client,
		warmup: requests(o.warmup, long, base), measure: requests(o.queries, long, base),
		check: func(r *postgram.SearchResponse) error {
			if len(r.Stats.Terms) != 12 {
				return fmt.Errorf("%d terms retained, want 12", len(r.Stats.Terms))
			}
			return nil
		},
	})

	// 5. A pasted paragraph of 300 distinct terms: 24 retained.
	pasted := func() string { return qg.unique(func() string { return qg.pasted(300) }) }
	ps = append(ps, searchProfile{
		name: "pasted_query", client: b.client,
		warmup: requests(o.warmup, pasted, base), measure: requests(o.queries, pasted, base),
		check: func(r *postgram.SearchResponse) error {
			if len(r.Stats.Terms) != query.MaxTerms || r.Stats.TruncatedTerms != 300-query.MaxTerms {
				return fmt.Errorf("terms %d truncated %d, want %d and %d", len(r.Stats.Terms), r.Stats.TruncatedTerms,
					query.MaxTerms, 300-query.MaxTerms)
			}
			return nil
		},
	})

	// 6. HNSW forced on a filter too narrow to fill the vector target: the
	// store falls back to exact ranking (it ranks exactly anyway on its
	// in-memory index, or without a vector index).
	wantPlan := "hnsw+exact"
	switch {
	case b.o.memIndex:
		wantPlan = "memory"
	case b.o.vectorIndex == string(postgres.VectorIndexNone):
		wantPlan = "exact"
	}
	narrow := base
	narrow.Strategy = postgram.StrategyHNSW
	narrow.Tags = []string{narrowTag}
	ps = append(ps, searchProfile{
		name: "underfilled_hnsw_fallback", client: b.client,
		warmup: requests(o.warmup, short, narrow), measure: requests(o.queries, short, narrow),
		check: func(r *postgram.SearchResponse) error {
			if r.Stats.VectorPlan != wantPlan {
				return fmt.Errorf("vector plan %q, want %s", r.Stats.VectorPlan, wantPlan)
			}
			return nil
		},
	})
	return ps, nil
}

// searchAll runs reqs one after another, discarding the answers.
func (b *searchBench) searchAll(ctx context.Context, c *postgram.Client, reqs []postgram.SearchRequest) error {
	for _, r := range reqs {
		if _, err := c.Search(ctx, r); err != nil {
			return fmt.Errorf("search %q: %w", truncateText(r.Query, 60), err)
		}
	}
	return nil
}

// runProfile runs a profile's set-up and warm-up, then times each measured
// search.
func (b *searchBench) runProfile(ctx context.Context, p searchProfile) (*profileResult, error) {
	if p.prepare != nil {
		if err := p.prepare(ctx); err != nil {
			return nil, err
		}
	}
	if err := b.searchAll(ctx, p.client, p.warmup); err != nil {
		return nil, err
	}
	r := &profileResult{name: p.name, plans: counter{}, probes: counter{}, sources: counter{}}
	calls0 := b.emb.Calls()
	if b.staged != nil {
		b.staged.take() // only the measured searches
	}
	for _, req := range p.measure {
		in0 := b.timed.inside.Load()
		t0 := time.Now()
		resp, err := p.client.Search(ctx, req)
		d := time.Since(t0)
		if err != nil {
			return nil, fmt.Errorf("search %q: %w", truncateText(req.Query, 60), err)
		}
		// The provider's time (the stub's delay and its own hashing of the
		// text) is not the library's: subtract all of it.
		ex := max(0, d-time.Duration(b.timed.inside.Load()-in0))
		r.wall = append(r.wall, d)
		r.excl = append(r.excl, ex)
		r.plans[resp.Stats.VectorPlan]++
		r.probes[resp.Stats.KeywordProbe]++
		src := string(resp.Stats.QueryEmbedding)
		if src == "" {
			src = "none"
		}
		r.sources[src]++
		r.results += len(resp.Results)
		if p.check != nil {
			if err := p.check(resp); err != nil {
				if r.checkFailures == 0 {
					r.firstFailure = fmt.Sprintf("%q: %v", truncateText(req.Query, 60), err)
				}
				r.checkFailures++
			}
		}
	}
	r.calls = b.emb.Calls() - calls0
	if b.staged != nil {
		r.stages = b.staged.take()
	}
	return r, nil
}

// searchStore is the store the measured clients use: the PostgreSQL store,
// timed per call with --stages.
func (b *searchBench) searchStore() driver.Storage {
	if !b.o.stages {
		return b.st
	}
	if b.staged == nil {
		b.staged = newStagedStore(b.st)
	}
	return b.staged
}

func (b *searchBench) printResults(results []*profileResult) error {
	t := newTable(fmt.Sprintf("search latency (ms; %d entities, %d chunks, %d dims, stub delay %s)", b.o.entities, b.o.chunks, b.o.dims, b.o.delay),
		"profile", "n", "p50", "p95", "p99", "p50 excl provider", "p95 excl provider", "provider calls",
		"query embedding", "vector plan", "keyword probe", "avg results", "check")
	for _, r := range results {
		w, x := summarize(r.wall), summarize(r.excl)
		check := "ok"
		if r.checkFailures > 0 {
			check = fmt.Sprintf("FAIL %d/%d", r.checkFailures, w.N)
		}
		t.add(r.name, fmt.Sprint(w.N), ms(w.P50), ms(w.P95), ms(w.P99), ms(x.P50), ms(x.P95),
			fmt.Sprint(r.calls), r.sources.String(), r.plans.String(), r.probes.String(),
			fmt.Sprintf("%.1f", float64(r.results)/float64(max(1, w.N))), check)
	}
	if err := t.write(b.out); err != nil {
		return err
	}
	for _, r := range results {
		if r.checkFailures > 0 {
			fmt.Fprintf(b.out, "  %s: first failed check: %s\n", r.name, r.firstFailure)
		}
	}
	for _, r := range results {
		if r.stages != nil {
			if err := writeStages(b.out, r.name, len(r.wall), r.stages); err != nil {
				return err
			}
		}
	}
	return nil
}

// printTargets prints each profile's p95 excluding the provider time against
// the target and reports whether any missed it.
func (b *searchBench) printTargets(results []*profileResult) bool {
	target := time.Duration(b.o.targetMS * float64(time.Millisecond))
	t := newTable(fmt.Sprintf("targets (p95 excluding provider time <= %s ms)", msf(b.o.targetMS)),
		"profile", "p95 excl provider", "target", "result")
	missed := false
	for _, r := range results {
		p95 := summarize(r.excl).P95
		res := "ok"
		if p95 > target {
			res = "MISS"
			missed = true
		}
		t.add(r.name, ms(p95), msf(b.o.targetMS), res)
	}
	_ = t.write(b.out)
	return missed
}

// explainCase is one statement to EXPLAIN.
type explainCase struct {
	query, sql string
	run        func(ctx context.Context) (string, error)
}

// explain prints EXPLAIN (ANALYZE, BUFFERS) summaries of the vector and
// keyword SQL for representative queries: a typical short query (the first
// measured cold query), a long keyword query and a narrow-filter query.
func (b *searchBench) explain(ctx context.Context, profiles []searchProfile) error {
	byName := map[string]searchProfile{}
	for _, p := range profiles {
		byName[p.name] = p
	}
	typical := byName["cold_unique_queries"].measure[0].Query
	long := byName["long_keyword_query"].measure[0].Query
	pasted := byName["pasted_query"].measure[0].Query
	narrowQ := byName["underfilled_hnsw_fallback"].measure[0].Query
	vecs, err := b.emb.EmbedBatch(ctx, []string{typical, long, narrowQ})
	if err != nil {
		return err
	}
	narrowFilter := driver.EntityFilter{Tags: []string{narrowTag}}
	vq := func(vec []float32, q string, f driver.EntityFilter) driver.VectorQuery {
		return driver.VectorQuery{Filter: f, ModelID: b.modelID, Vector: vec, Limit: vectorTarget}
	}
	vector := func(label, q string, vec []float32, f driver.EntityFilter, plan string) explainCase {
		return explainCase{label, "vector " + plan, func(ctx context.Context) (string, error) {
			return b.st.ExplainVector(ctx, workspace, vq(vec, q, f), plan)
		}}
	}
	// The keyword pool is one statement (KeywordFill); its per-term steps
	// take the terms rarest first by the planner's statistics, as the
	// client orders them (it also puts compound terms first).
	fill := func(label, q string, f driver.EntityFilter) (explainCase, error) {
		terms := query.Parse(q).Terms
		freqs, _, err := b.st.TermFrequencies(ctx, workspace, terms)
		if err != nil {
			return explainCase{}, err
		}
		order := make([]int, len(terms))
		for i := range order {
			order[i] = i
		}
		if freqs != nil {
			slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(freqs[x], freqs[y]) })
		}
		kq := driver.KeywordFillQuery{Filter: f, Terms: terms, Order: order, Limit: postgram.KeywordPoolSize}
		// The terms whose step may walk the workspace, as ranking v2
		// passes them (rank.Plan.ScanTerms, from the planner's estimate).
		for i, fr := range freqs {
			if n := float64(b.o.chunks); rank.Walkable(fr*n, n, kq.Limit) {
				kq.ScanTerms = append(kq.ScanTerms, i)
			}
		}
		return explainCase{label, fmt.Sprintf("keyword fill (%d terms)", len(terms)), func(ctx context.Context) (string, error) {
			return b.st.ExplainKeywordFill(ctx, workspace, kq)
		}}, nil
	}
	cases := []explainCase{
		vector("typical", typical, vecs[0], driver.EntityFilter{}, "hnsw"),
		vector("typical", typical, vecs[0], driver.EntityFilter{}, "exact"),
	}
	for _, k := range []struct {
		label, q string
		f        driver.EntityFilter
	}{{"typical", typical, driver.EntityFilter{}}, {"long", long, driver.EntityFilter{}},
		{"pasted", pasted, driver.EntityFilter{}}, {"narrow", narrowQ, narrowFilter}} {
		c, err := fill(k.label, k.q, k.f)
		if err != nil {
			return err
		}
		cases = append(cases, c)
	}
	cases = append(cases,
		vector("narrow", narrowQ, vecs[2], narrowFilter, "hnsw"),
		vector("narrow", narrowQ, vecs[2], narrowFilter, "exact"))

	fmt.Fprintf(b.out, "\n== EXPLAIN (ANALYZE, BUFFERS), one execution each, caches warm ==\n")
	fmt.Fprintf(b.out, "  typical = %q (first cold query)\n", truncateText(typical, 100))
	fmt.Fprintf(b.out, "  long    = %q\n", truncateText(long, 100))
	fmt.Fprintf(b.out, "  pasted  = %q\n", truncateText(pasted, 100))
	fmt.Fprintf(b.out, "  narrow  = %q with tags [%s]\n", truncateText(narrowQ, 100), narrowTag)
	t := newTable("", "query", "sql", "exec ms", "plan ms", "shared hit", "shared read", "rows", "hottest node (self ms)", "scans", "top plan nodes")
	var full strings.Builder
	for _, c := range cases {
		text, err := c.run(ctx)
		if err != nil {
			return fmt.Errorf("explain %s %s: %w", c.query, c.sql, err)
		}
		s := summarizePlan(text, 4)
		short := func(labels []string) []string {
			out := make([]string, len(labels))
			for i, l := range labels {
				out[i] = shortLabel(l, 40)
			}
			return out
		}
		t.add(c.query, c.sql, msf(s.ExecMS), msf(s.PlanMS), fmt.Sprint(s.SharedHit), fmt.Sprint(s.SharedRead),
			fmt.Sprint(s.Rows), fmt.Sprintf("%s (%s)", shortLabel(s.Hottest, 40), msf(s.HottestMS)),
			strings.Join(short(s.Scans), ", "), strings.Join(short(s.TopNodes), " > "))
		fmt.Fprintf(&full, "\n--- %s / %s ---\n%s", c.query, c.sql, text)
	}
	if err := t.write(b.out); err != nil {
		return err
	}
	if b.o.explainFull {
		fmt.Fprint(b.out, full.String())
	}
	return nil
}

// truncateText shortens s to at most n bytes (on a rune boundary) with "…".
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// timedEmbedder adds up the time spent inside the provider, so the
// profiles can report latency without it.
type timedEmbedder struct {
	*postgramtest.Embedder
	inside atomic.Int64 // nanoseconds
}

func (e *timedEmbedder) EmbedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	t0 := time.Now()
	defer func() { e.inside.Add(int64(time.Since(t0))) }()
	return e.Embedder.EmbedBatch(ctx, texts)
}

// recall measures the vector branch as searches use it (the HNSW scan
// asked for vectorTarget rows) against exact cosine ranking: recall@10 is
// the share of the exact top 10 found in the ANN answer's top 10. With
// --recall-ef and --recall-rerank it does so at each setting, through a
// store opened with it, against one exact ranking per query.
func (b *searchBench) recall(ctx context.Context, profiles []searchProfile) error {
	var queries []string
	for _, p := range profiles {
		if p.name == "cold_unique_queries" {
			for _, q := range append(p.measure, p.warmup...) {
				queries = append(queries, q.Query)
			}
		}
	}
	queries = queries[:min(b.o.recall, len(queries))]
	type annStore struct {
		name    string
		st      *postgres.Store
		recalls []float64
		times   []time.Duration
	}
	name := "the searches' store (" + b.o.vectorIndex + ")"
	if b.o.memIndex {
		name = fmt.Sprintf("the searches' store (in-memory index, half precision %v, candidates %d)", b.o.memHalf, b.o.memCandidates)
	}
	stores := []*annStore{{st: b.st, name: name}}
	// The exact ranking is PostgreSQL's: a store with the in-memory index
	// would answer it from its copy.
	ref := b.st
	if b.o.memIndex {
		st, err := postgres.Open(ctx, postgres.Config{URL: b.dsn, MaxConns: 2})
		if err != nil {
			return fmt.Errorf("recall, exact store: %w", err)
		}
		defer st.Close()
		ref = st
	}
	extra := func(name string, cfg postgres.Config) error {
		cfg.URL, cfg.MaxConns = b.dsn, 2
		st, err := postgres.Open(ctx, cfg)
		if err != nil {
			return fmt.Errorf("recall, store %s: %w", name, err)
		}
		stores = append(stores, &annStore{name: name, st: st})
		return nil
	}
	if len(b.o.recallEf)+len(b.o.recallRerank) > 0 {
		stores = stores[:0]
		defer func() {
			for _, as := range stores {
				as.st.Close()
			}
		}()
		for _, ef := range b.o.recallEf {
			if err := extra(fmt.Sprintf("hnsw, ef_search %d", ef), postgres.Config{EfSearch: ef}); err != nil {
				return err
			}
		}
		for _, n := range b.o.recallRerank {
			if err := extra(fmt.Sprintf("binary, rerank %d", n), postgres.Config{VectorIndex: postgres.VectorIndexBinary, RerankCandidates: n}); err != nil {
				return err
			}
		}
	}
	b.logf("recall: %d queries, exact ranking for each, %d index settings", len(queries), len(stores))
	var exactT []time.Duration
	for i, q := range queries {
		vecs, err := b.emb.EmbedBatch(ctx, []string{q})
		if err != nil {
			return err
		}
		top := func(st *postgres.Store, strategy driver.Strategy, limit int) ([]uuid.UUID, time.Duration, error) {
			start := time.Now()
			res, err := st.VectorSearch(ctx, workspace, driver.VectorQuery{ModelID: b.modelID, Vector: vecs[0], Limit: limit, Strategy: strategy})
			if err != nil {
				return nil, 0, fmt.Errorf("recall, %s search: %w", strategy, err)
			}
			// An ANN scan with relaxed order returns its rows roughly
			// sorted (searches re-sort them): rank them as a search does.
			hits := slices.Clone(res.Hits)
			slices.SortStableFunc(hits, func(a, b driver.VectorHit) int {
				return cmp.Compare(b.Similarity, a.Similarity)
			})
			var ids []uuid.UUID
			for _, h := range hits[:min(10, len(hits))] {
				ids = append(ids, h.ChunkID)
			}
			return ids, time.Since(start), nil
		}
		exact, e, err := top(ref, driver.StrategyExact, 10)
		if err != nil {
			return err
		}
		exactT = append(exactT, e)
		for _, as := range stores {
			ann, a, err := top(as.st, driver.StrategyHNSW, vectorTarget)
			if err != nil {
				return err
			}
			found := 0
			for _, id := range exact {
				if slices.Contains(ann, id) {
					found++
				}
			}
			if len(exact) > 0 {
				as.recalls = append(as.recalls, float64(found)/float64(len(exact)))
			}
			as.times = append(as.times, a)
		}
		if (i+1)%10 == 0 {
			b.logf("recall: %d/%d queries", i+1, len(queries))
		}
	}
	slices.Sort(exactT)
	fmt.Fprintf(b.out, "\n== vector recall@10 against exact ranking (%d queries, HNSW asked for %d rows; exact p50 %s) ==\n",
		len(queries), vectorTarget, percentile(exactT, 50).Round(10*time.Microsecond))
	fmt.Fprintln(b.out, "| index | recall@10 mean | lowest | queries with all 10 | ANN p50 | ANN p95 |")
	fmt.Fprintln(b.out, "| --- | --- | --- | --- | --- | --- |")
	for _, as := range stores {
		if len(as.recalls) == 0 {
			fmt.Fprintf(b.out, "| %s | no query returned an exact answer | | | | |\n", as.name)
			continue
		}
		mean := 0.0
		for _, r := range as.recalls {
			mean += r
		}
		mean /= float64(len(as.recalls))
		slices.Sort(as.recalls)
		slices.Sort(as.times)
		fmt.Fprintf(b.out, "| %s | %.3f | %.1f | %d of %d | %s | %s |\n", as.name, mean, as.recalls[0], countAtLeast(as.recalls, 1), len(as.recalls),
			percentile(as.times, 50).Round(10*time.Microsecond), percentile(as.times, 95).Round(10*time.Microsecond))
	}
	return nil
}

func countAtLeast(xs []float64, v float64) int {
	n := 0
	for _, x := range xs {
		if x >= v {
			n++
		}
	}
	return n
}

// peakRSS is the process's peak resident memory (VmHWM), or "unknown".
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
