package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
)

// ingestSchema is the ingest benchmark's schema, dropped and recreated on
// every run.
const ingestSchema = "postgram_bench_ingest"

// workerConcurrency is Worker.Concurrency for the Start/Stop phase.
const workerConcurrency = 2

// ingestOptions are the ingest subcommand's flags.
type ingestOptions struct {
	databaseURL string
	entities    int
	concurrency int
	size        int
	dims        int
	seed        uint64
	maxConns    int
}

func parseIngestFlags(args []string, stderr io.Writer) (ingestOptions, int) {
	var o ingestOptions
	fs := newFlagSet("ingest", `Measures write throughput in the schema `+ingestSchema+` (dropped and recreated
on every run): Client.Store from N goroutines (entities/s and per-call
latency), then enrichment with a zero-latency stub embedder, once through
Admin.EnrichPending and once through the background worker (Start/Stop,
Worker.Concurrency 2) on a second, identical load.`, stderr)
	fs.StringVar(&o.databaseURL, "database-url", defaultDatabaseURL(), "PostgreSQL URL (default $DATABASE_URL, else the loopback test cluster)")
	fs.IntVar(&o.entities, "entities", 5000, "entities to store")
	fs.IntVar(&o.concurrency, "concurrency", 8, "concurrent Client.Store goroutines")
	fs.IntVar(&o.size, "size", 1024, "bytes of content per entity")
	fs.IntVar(&o.dims, "dims", 1536, "embedding dimensions")
	fs.Uint64Var(&o.seed, "seed", defaultSeed, "seed of the generated text")
	fs.IntVar(&o.maxConns, "max-conns", 0, "PostgreSQL pool size (default: concurrency + 2)")
	code := parseFlags(fs, args, func() error {
		switch {
		case o.entities < 1:
			return errors.New("--entities must be positive")
		case o.concurrency < 1:
			return errors.New("--concurrency must be positive")
		case o.size < 1 || o.size > postgram.MaxContentBytes:
			return fmt.Errorf("--size must be between 1 and %d", postgram.MaxContentBytes)
		case o.dims < 1 || o.dims > 16000:
			return errors.New("--dims must be between 1 and 16000")
		case o.maxConns < 0:
			return errors.New("--max-conns must not be negative")
		}
		return nil
	})
	if o.maxConns == 0 {
		o.maxConns = o.concurrency + 2
	}
	return o, code
}

// runIngest is the ingest subcommand.
func runIngest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code := parseIngestFlags(args, stderr)
	if code >= 0 {
		return code
	}
	b := &ingestBench{o: o, out: stdout, log: stderr, start: time.Now()}
	if err := b.run(ctx); err != nil {
		fmt.Fprintf(stderr, "postgram-bench ingest: %v\n", err)
		return exitError
	}
	return exitOK
}

// ingestBench holds one ingest run's state.
type ingestBench struct {
	o     ingestOptions
	out   io.Writer
	log   io.Writer
	start time.Time
	dsn   string
}

func (b *ingestBench) logf(format string, args ...any) { logf(b.log, b.start, format, args...) }

// ingestRow is one line of the result table.
type ingestRow struct {
	phase       string
	concurrency int
	entities    int
	chunks      int
	elapsed     time.Duration
	latency     *summary // per call, when measured
	calls       int64    // provider calls, -1 when not applicable
}

func (b *ingestBench) run(ctx context.Context) error {
	o := b.o
	var err error
	b.dsn, err = dsnWithSearchPath(o.databaseURL, ingestSchema)
	if err != nil {
		return err
	}
	vocab := NewVocabulary(o.seed)
	inputs := make([]postgram.StoreInput, o.entities)
	for i := range inputs {
		inputs[i] = postgram.StoreInput{
			Type:    entityTypes[i%len(entityTypes)],
			Content: ContentOfSize(vocab, o.seed, i, o.size),
			Tags:    []string{teamTags[i%len(teamTags)]},
			Source:  "postgram-bench",
		}
	}

	st, err := b.freshStore(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if st != nil {
			st.Close()
		}
	}()
	fmt.Fprintf(b.out, "postgram-bench ingest\n")
	fmt.Fprintf(b.out, "  database  %s\n", redact(b.dsn))
	fmt.Fprintf(b.out, "  server    %s\n", serverInfo(ctx, st))
	fmt.Fprintf(b.out, "  client    %s %s/%s, GOMAXPROCS=%d, NumCPU=%d, pool max_conns=%d\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(), o.maxConns)
	fmt.Fprintf(b.out, "  library   %s\n", buildInfo())
	fmt.Fprintf(b.out, "  load      %d entities of %d bytes, %d dims, zero-latency stub embedder, schema %s (recreated)\n",
		o.entities, o.size, o.dims, ingestSchema)

	var rows []ingestRow

	// Phase 1: Client.Store from N goroutines.
	emb := postgramtest.NewEmbedder(o.dims)
	client, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: emb})
	if err != nil {
		return err
	}
	b.logf("store: %d entities, %d goroutines", o.entities, o.concurrency)
	lat := make([]time.Duration, o.entities)
	t0 := time.Now()
	err = parallel(ctx, o.concurrency, o.entities, func(ctx context.Context, i int) error {
		s := time.Now()
		_, err := client.Store(ctx, inputs[i])
		lat[i] = time.Since(s)
		return err
	})
	storeEl := time.Since(t0)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	counts, err := countFixture(ctx, st, workspace)
	if err != nil {
		return err
	}
	sum := summarize(lat)
	rows = append(rows, ingestRow{phase: "store (Client.Store)", concurrency: o.concurrency, entities: o.entities,
		chunks: counts.Chunks, elapsed: storeEl, latency: &sum, calls: -1})

	// Phase 2: EnrichPending over everything.
	b.logf("enrich: EnrichPending over %d entities / %d chunks", o.entities, counts.Chunks)
	calls0 := emb.Calls()
	t0 = time.Now()
	es, err := operator(client).EnrichPending(ctx)
	enrichEl := time.Since(t0)
	if err != nil {
		return fmt.Errorf("EnrichPending: %w", err)
	}
	if err := checkQueueDone(ctx, client); err != nil {
		return err
	}
	rows = append(rows, ingestRow{phase: "enrich (EnrichPending)", concurrency: 1, entities: es.Entities,
		chunks: es.Chunks, elapsed: enrichEl, calls: emb.Calls() - calls0})
	if int64(es.Calls) != emb.Calls()-calls0 {
		b.logf("note: EnrichStats.Calls=%d but the embedder saw %d calls", es.Calls, emb.Calls()-calls0)
	}

	// Phase 3: the same load again on a fresh schema, enriched by the
	// background worker.
	st.Close()
	if st, err = b.freshStore(ctx); err != nil {
		return err
	}
	emb = postgramtest.NewEmbedder(o.dims)
	client, err = postgram.New(ctx, postgram.Config{Store: st, Embedder: emb,
		Worker: postgram.WorkerConfig{Concurrency: workerConcurrency}})
	if err != nil {
		return err
	}
	b.logf("worker: re-storing %d entities on a fresh schema (not measured)", o.entities)
	if err := parallel(ctx, o.concurrency, o.entities, func(ctx context.Context, i int) error {
		_, err := client.Store(ctx, inputs[i])
		return err
	}); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if counts, err = countFixture(ctx, st, workspace); err != nil {
		return err
	}
	b.logf("worker: Start with Worker.Concurrency %d, polling QueueStatus until nothing is pending", workerConcurrency)
	calls0 = emb.Calls()
	t0 = time.Now()
	if err := client.Start(ctx); err != nil {
		return err
	}
	qs, err := waitQueueEmpty(ctx, client, 50*time.Millisecond)
	workerEl := time.Since(t0)
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	stopErr := client.Stop(stopCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if stopErr != nil {
		return stopErr
	}
	if qs.Embedding.Completed != o.entities {
		return fmt.Errorf("worker: %d entities completed, want %d", qs.Embedding.Completed, o.entities)
	}
	rows = append(rows, ingestRow{phase: "enrich (worker Start/Stop)", concurrency: workerConcurrency, entities: qs.Embedding.Completed,
		chunks: counts.Chunks, elapsed: workerEl, calls: emb.Calls() - calls0})

	t := newTable(fmt.Sprintf("ingest throughput (%d entities × %d bytes, %d dims)", o.entities, o.size, o.dims),
		"phase", "concurrency", "entities", "chunks", "elapsed s", "entities/s", "chunks/s",
		"p50 ms", "p95 ms", "p99 ms", "provider calls")
	for _, r := range rows {
		p50, p95, p99, calls := "-", "-", "-", "-"
		if r.latency != nil {
			p50, p95, p99 = ms(r.latency.P50), ms(r.latency.P95), ms(r.latency.P99)
		}
		if r.calls >= 0 {
			calls = fmt.Sprint(r.calls)
		}
		t.add(r.phase, fmt.Sprint(r.concurrency), fmt.Sprint(r.entities), fmt.Sprint(r.chunks),
			fmt.Sprintf("%.2f", r.elapsed.Seconds()), perSec(rate(r.entities, r.elapsed)), perSec(rate(r.chunks, r.elapsed)),
			p50, p95, p99, calls)
	}
	if err := t.write(b.out); err != nil {
		return err
	}
	fmt.Fprintf(b.out, "  worker phase: elapsed from Start until QueueStatus reported 0 pending (polled every 50ms)\n")
	printFooter(b.out, b.start)
	return nil
}

// freshStore drops and recreates the ingest schema, migrates it and
// returns a store connected to it.
func (b *ingestBench) freshStore(ctx context.Context) (*postgres.Store, error) {
	st, err := openStore(ctx, b.dsn, b.o.maxConns)
	if err != nil {
		return nil, err
	}
	if err := prepareSchema(ctx, st, ingestSchema, true); err != nil {
		st.Close()
		return nil, err
	}
	// Reconnect so that no pooled connection predates the new schema.
	st.Close()
	if st, err = openStore(ctx, b.dsn, b.o.maxConns); err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}
