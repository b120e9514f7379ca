package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/transport/rest"
)

// loadSchema is the load benchmark's schema, dropped and recreated on
// every run.
const loadSchema = "postgram_bench_load"

// openLoadStore opens an empty, migrated store of the chosen backend and
// describes it.
func openLoadStore(ctx context.Context, o loadOptions) (driver.Storage, string, func(), error) {
	if o.store == "sqlite" {
		dir, cleanup := o.dir, func() {}
		if dir == "" {
			d, err := os.MkdirTemp("", "postgram-bench-load-")
			if err != nil {
				return nil, "", nil, err
			}
			dir, cleanup = d, func() { os.RemoveAll(d) }
		}
		path := filepath.Join(dir, "load.db")
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				cleanup()
				return nil, "", nil, err
			}
		}
		// As postgram-server opens it by default: every commit fsynced.
		st, err := sqlite.Open(ctx, sqlite.Config{Path: path, Durable: true})
		if err != nil {
			cleanup()
			return nil, "", nil, err
		}
		if err := st.Migrate(ctx); err != nil {
			st.Close()
			cleanup()
			return nil, "", nil, err
		}
		return st, "sqlite " + path + " (durable commits)", func() { st.Close(); cleanup() }, nil
	}
	dsn, err := dsnWithSearchPath(o.databaseURL, loadSchema)
	if err != nil {
		return nil, "", nil, err
	}
	admin, err := openStore(ctx, o.databaseURL, 2)
	if err != nil {
		return nil, "", nil, err
	}
	err = prepareSchema(ctx, admin, loadSchema, true)
	admin.Close()
	if err != nil {
		return nil, "", nil, err
	}
	st, err := openStoreWith(ctx, postgres.Config{URL: dsn, MaxConns: int32(o.maxConns), MemoryIndex: o.memIndex,
		VectorIndex: postgres.VectorIndexKind(o.vectorIndex)})
	if err != nil {
		return nil, "", nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, "", nil, err
	}
	info := "postgres " + serverInfo(ctx, st)
	if o.memIndex {
		info += ", in-memory index"
	}
	info += ", vector index " + o.vectorIndex
	return st, info, func() { st.Close() }, nil
}

type loadOptions struct {
	store       string
	dir         string
	databaseURL string
	duration    time.Duration
	concurrency int
	sweep       []int
	searchRatio float64
	seed        int
	queries     int
	dims        int
	maxConns    int
	cpuProfile  string
	memProfile  string
	ranking     string
	memIndex    bool
	vectorIndex string
}

func parseLoadFlags(args []string, stderr io.Writer) (loadOptions, int) {
	var o loadOptions
	fs := newFlagSet("load", `Drives a real postgram-server handler (REST over loopback TCP, bearer key,
in-process worker, deterministic stub embedder) with many concurrent HTTP
clients: a mix of POST /api/search and POST /api/entities. Reports throughput
and latency per request kind, and every error. Schema `+loadSchema+` is
dropped and recreated on every run.`, stderr)
	fs.StringVar(&o.store, "store", "postgres", "backend: postgres, or sqlite (the embedded default store, durable commits, in a temporary directory unless --dir)")
	fs.StringVar(&o.dir, "dir", "", "with --store sqlite: directory for the database file (emptied of a previous run's file)")
	fs.StringVar(&o.databaseURL, "database-url", defaultDatabaseURL(), "PostgreSQL URL (default $DATABASE_URL, else the loopback test cluster)")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "how long to drive load")
	fs.IntVar(&o.concurrency, "concurrency", 32, "concurrent HTTP clients")
	fs.Func("sweep", "run the load at each of these client counts in turn, each on a fresh store, e.g. 8,16,32,64 (instead of --concurrency), and print a summary; profiles get the count as a suffix", func(v string) error {
		o.sweep = o.sweep[:0]
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > 1024 {
				return fmt.Errorf("client count %q: must be a number between 1 and 1024", f)
			}
			o.sweep = append(o.sweep, n)
		}
		return nil
	})
	fs.Float64Var(&o.searchRatio, "search-ratio", 0.8, "fraction of requests that are searches (the rest store)")
	fs.IntVar(&o.seed, "seed-entities", 2000, "entities stored and embedded before the load")
	fs.IntVar(&o.queries, "queries", 300, "distinct search queries (repeated, as real agents do)")
	fs.IntVar(&o.dims, "dims", 1536, "embedding dimensions")
	fs.IntVar(&o.maxConns, "max-conns", 16, "PostgreSQL pool size")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured run (server and clients, one process) to FILE")
	fs.StringVar(&o.memProfile, "memprofile", "", "write an allocation profile after the measured run to FILE")
	fs.StringVar(&o.ranking, "ranking", "", "ranking the searches ask for (v2, seed); default: the server's")
	fs.BoolVar(&o.memIndex, "memory-index", false, "with --store postgres: answer searches from the store's in-process index of vectors and keywords (postgres.Config.MemoryIndex), loaded after seeding")
	fs.StringVar(&o.vectorIndex, "vector-index", "hnsw", "with --store postgres: each model's vector index (hnsw, binary, none: postgres.Config.VectorIndex); none suits --memory-index")
	code := parseFlags(fs, args, func() error {
		switch {
		case !postgres.VectorIndexKind(o.vectorIndex).Valid():
			return fmt.Errorf("--vector-index must be hnsw, binary or none, not %q", o.vectorIndex)
		case o.vectorIndex != "hnsw" && o.store != "postgres":
			return errors.New("--vector-index is a PostgreSQL setting")
		case o.duration <= 0 || o.duration > time.Hour:
			return errors.New("--duration must be between 0 and 1h")
		case o.concurrency < 1 || o.concurrency > 1024:
			return errors.New("--concurrency must be between 1 and 1024")
		case o.searchRatio < 0 || o.searchRatio > 1:
			return errors.New("--search-ratio must be between 0 and 1")
		case o.seed < 1 || o.queries < 1:
			return errors.New("--seed-entities and --queries must be positive")
		case o.dims < 1 || o.dims > 2000:
			return errors.New("--dims must be between 1 and 2000")
		case o.maxConns < 2:
			return errors.New("--max-conns must be at least 2")
		case o.store != "postgres" && o.store != "sqlite":
			return fmt.Errorf("--store must be postgres or sqlite, not %q", o.store)
		case o.memIndex && o.store != "postgres":
			return errors.New("--memory-index is a PostgreSQL setting (the SQLite store always ranks in memory)")
		case o.ranking != "" && !postgram.RankingMode(o.ranking).Valid():
			return fmt.Errorf("--ranking must be v2 or seed, not %q", o.ranking)
		}
		return nil
	})
	return o, code
}

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code := parseLoadFlags(args, stderr)
	if code >= 0 {
		return code
	}
	if err := load(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "postgram-bench load:", err)
		return exitError
	}
	return exitOK
}

// levelResult is one load level's outcome.
type levelResult struct {
	clients          int
	searches, stores summary
	elapsed          time.Duration
	errors           int64
}

// load runs the load at --concurrency, or at each --sweep level on a fresh
// store of its own, and summarises a sweep.
func load(ctx context.Context, o loadOptions, stdout, stderr io.Writer) error {
	levels := o.sweep
	if len(levels) == 0 {
		levels = []int{o.concurrency}
	}
	var results []levelResult
	var failed int64
	for i, clients := range levels {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		r, err := loadLevel(ctx, o, clients, stdout, stderr)
		if err != nil {
			return err
		}
		results = append(results, r)
		failed += r.errors
	}
	if len(results) > 1 {
		fmt.Fprintln(stdout)
		t := newTable("sweep (each level on a fresh store; target: ≥ 1,000 searches/s at p95 ≤ 30 ms)",
			"clients", "searches/s", "search p50", "search p95", "search p99", "stores/s", "store p95", "errors", "target")
		for _, r := range results {
			met := "met"
			if rate(r.searches.N, r.elapsed) < 1000 || r.searches.P95 > 30*time.Millisecond {
				met = "not met"
			}
			t.add(fmt.Sprint(r.clients), perSec(rate(r.searches.N, r.elapsed)), ms(r.searches.P50), ms(r.searches.P95), ms(r.searches.P99),
				perSec(rate(r.stores.N, r.elapsed)), ms(r.stores.P95), fmt.Sprint(r.errors), met)
		}
		if err := t.write(stdout); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d requests failed", failed)
	}
	return nil
}

// loadLevel seeds a fresh store, serves it and drives it with clients
// concurrent clients for o.duration.
func loadLevel(ctx context.Context, o loadOptions, clients int, stdout, stderr io.Writer) (levelResult, error) {
	start := time.Now()
	st, info, closeStore, err := openLoadStore(ctx, o)
	if err != nil {
		return levelResult{}, err
	}
	defer closeStore()
	emb := postgramtest.NewEmbedder(o.dims)
	client, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: emb})
	if err != nil {
		return levelResult{}, err
	}
	fmt.Fprintf(stdout, "postgram-bench load\n  %s\n  store     %s\n  load      %d clients for %s, %.0f%% search / %.0f%% store, %d seeded entities, %d distinct queries, %d dims\n",
		buildInfo(), info, clients, o.duration, o.searchRatio*100, (1-o.searchRatio)*100, o.seed, o.queries, o.dims)

	// Seed and embed.
	vocab := NewVocabulary(defaultSeed)
	if err := parallel(ctx, 8, o.seed, func(ctx context.Context, i int) error {
		_, err := client.Store(ctx, postgram.StoreInput{Type: postgram.TypeDocument, Content: ContentOfSize(vocab, defaultSeed, i, 800)})
		return err
	}); err != nil {
		return levelResult{}, fmt.Errorf("seed: %w", err)
	}
	if _, err := operator(client).EnrichPending(ctx); err != nil {
		return levelResult{}, fmt.Errorf("seed: embed: %w", err)
	}
	if pg, ok := st.(*postgres.Store); ok {
		if err := analyze(ctx, pg, loadSchema); err != nil {
			return levelResult{}, err
		}
		if o.memIndex {
			if err := pg.WarmMemoryIndex(ctx, postgram.DefaultWorkspace); err != nil {
				return levelResult{}, err
			}
		}
	}
	logf(stderr, start, "seeded %d entities", o.seed)

	token, _, err := operator(client).CreateKey(ctx, postgram.KeySpec{Name: "load", Scopes: postgram.AllScopes})
	if err != nil {
		return levelResult{}, err
	}
	// The server: the same handler stack postgram-server mounts, with the
	// background worker running.
	quiet := slog.New(slog.DiscardHandler)
	handler := rest.RequestID(rest.Recover(quiet)(rest.New(rest.Config{Client: client, Logger: quiet})))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return levelResult{}, err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	wctx, stopWorker := context.WithCancel(context.Background())
	defer stopWorker()
	if err := client.Start(wctx); err != nil {
		return levelResult{}, err
	}
	defer client.Stop(context.Background())
	base := "http://" + ln.Addr().String()

	qg := newQueryGen(vocab, defaultSeed+7)
	queries := make([][]byte, o.queries)
	for i := range queries {
		q := map[string]any{"query": qg.short(), "limit": 10}
		if o.ranking != "" {
			q["ranking"] = o.ranking
		}
		queries[i], _ = json.Marshal(q)
	}
	transport := &http.Transport{MaxIdleConns: clients * 2, MaxIdleConnsPerHost: clients * 2, IdleConnTimeout: time.Minute}
	hc := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	defer transport.CloseIdleConnections()

	type sample struct {
		search bool
		d      time.Duration
	}
	var (
		mu       sync.Mutex
		samples  []sample
		errCount atomic.Int64
		errMsgs  = map[string]int{}
		stored   atomic.Int64
	)
	recordErr := func(msg string) {
		errCount.Add(1)
		mu.Lock()
		errMsgs[msg]++
		mu.Unlock()
	}
	do := func(ctx context.Context, path string, body []byte, want int) (time.Duration, bool) {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				recordErr(err.Error())
			}
			return 0, false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if resp.StatusCode != want {
			recordErr(fmt.Sprintf("%s: HTTP %d", path, resp.StatusCode))
			return d, false
		}
		return d, true
	}
	// Warm the query cache and connections for a moment, then measure.
	warm, cancelWarm := context.WithTimeout(ctx, 2*time.Second)
	for i := 0; i < min(len(queries), 200); i++ {
		do(warm, "/api/search", queries[i], 200)
	}
	cancelWarm()
	errCount.Store(0)
	clear(errMsgs)

	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	suffix := "" // a sweep writes one profile per level
	if len(o.sweep) > 0 {
		suffix = "." + strconv.Itoa(clients)
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile + suffix)
		if err != nil {
			return levelResult{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return levelResult{}, err
		}
		defer pprof.StopCPUProfile()
	}
	errCount.Store(0)
	clear(errMsgs)
	runCtx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var wg sync.WaitGroup
	cpu0, cpuOK := processCPU()
	t0 := time.Now()
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 99))
			var local []sample
			for runCtx.Err() == nil {
				if r.Float64() < o.searchRatio {
					d, ok := do(runCtx, "/api/search", queries[r.IntN(len(queries))], 200)
					if ok {
						local = append(local, sample{true, d})
					}
					continue
				}
				n := stored.Add(1)
				body, _ := json.Marshal(map[string]any{"type": "memory", "content": ContentOfSize(vocab, defaultSeed+3, int(n), 600),
					"tags": []string{"load"}})
				d, ok := do(runCtx, "/api/entities", body, 201)
				if ok {
					local = append(local, sample{false, d})
				}
			}
			mu.Lock()
			samples = append(samples, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	cpu1, _ := processCPU()
	runtime.ReadMemStats(&ms1)
	if o.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if o.memProfile != "" {
		f, err := os.Create(o.memProfile + suffix)
		if err != nil {
			return levelResult{}, err
		}
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
		if err != nil {
			return levelResult{}, err
		}
	}
	var searches, stores []time.Duration
	for _, s := range samples {
		if s.search {
			searches = append(searches, s.d)
		} else {
			stores = append(stores, s.d)
		}
	}
	t := newTable(fmt.Sprintf("load (%d clients, %s, loopback HTTP)", clients, o.duration),
		"request", "n", "per second", "p50 ms", "p95 ms", "p99 ms", "max ms")
	for _, row := range []struct {
		name string
		d    []time.Duration
	}{{"POST /api/search", searches}, {"POST /api/entities", stores}, {"all", append(append([]time.Duration(nil), searches...), stores...)}} {
		s := summarize(row.d)
		t.add(row.name, fmt.Sprint(s.N), perSec(rate(s.N, elapsed)), ms(s.P50), ms(s.P95), ms(s.P99), ms(s.Max))
	}
	if err := t.write(stdout); err != nil {
		return levelResult{}, err
	}
	fmt.Fprintf(stdout, "errors: %d\n", errCount.Load())
	for msg, n := range errMsgs {
		fmt.Fprintf(stdout, "  %d × %s\n", n, msg)
	}
	res := levelResult{clients, summarize(searches), summarize(stores), elapsed, errCount.Load()}
	q, err := client.QueueStatus(ctx, 0)
	if err == nil {
		fmt.Fprintf(stdout, "queue after the run: %d pending, %d completed, %d failed\n", q.Embedding.Pending, q.Embedding.Completed, q.Embedding.Failed)
	}
	if pg, ok := st.(*postgres.Store); ok && o.memIndex {
		if ms, ok := pg.MemoryIndexStatus(postgram.DefaultWorkspace); ok {
			fmt.Fprintf(stdout, "in-memory index: %d exact vector searches brought a remembered result of the same query up to date, %d scanned every vector\n",
				ms.RepeatsReused, ms.Scans)
		}
	}
	if n := len(samples); cpuOK && n > 0 {
		// The throughput this machine's cores would allow at this CPU cost
		// is steadier from run to run than the throughput itself, which the
		// VM's neighbours move by ±15%.
		cpu, who := cpu1-cpu0, "clients, server, worker"
		if o.store == "postgres" {
			who += "; PostgreSQL not included"
		}
		fmt.Fprintf(stdout, "cpu: %.1f s user+sys in this process (%s) = %.3f ms per request, %.0f%% of %d cores\n",
			cpu.Seconds(), who,
			float64(cpu.Microseconds())/1000/float64(n), 100*cpu.Seconds()/elapsed.Seconds()/float64(runtime.NumCPU()), runtime.NumCPU())
	}
	fmt.Fprintf(stdout, "go runtime: %.1f MiB allocated during the run, GOMAXPROCS=%d\n",
		float64(ms1.TotalAlloc-ms0.TotalAlloc)/(1<<20), runtime.GOMAXPROCS(0))
	printFooter(stdout, start)
	return res, nil
}
