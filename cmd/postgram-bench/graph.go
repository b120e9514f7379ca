package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/chunk"
	"github.com/postgram-go/postgram/storage/sqlite"
)

// graphFixtureVersion changes whenever the generated graph does; it salts
// the fixture's ids, so a stale fixture is never mistaken for a current one.
const graphFixtureVersion = 1

// Graph targets (issue 5): Expand p95 and the link-neighbors wall time.
const (
	graphTargetDepth2 = 10 * time.Millisecond
	graphTargetDepth3 = 25 * time.Millisecond
	graphTargetLink   = 60 * time.Second
)

// graphOptions are the graph subcommand's flags.
type graphOptions struct {
	backends    []string
	databaseURL string
	schema      string
	reset       bool
	path        string
	entities    int
	edges       int
	dims        int
	seeds       int
	rounds      int
	seed        uint64
	maxConns    int
	concurrency int
	noNeighbors bool
	cpuProfile  string
	assert      bool
}

func parseGraphFlags(args []string, stderr io.Writer) (graphOptions, int) {
	var o graphOptions
	var backends string
	fs := newFlagSet("graph", `Measures the knowledge graph on each backend. The fixture: --entities
single-chunk entities (the search fixture's prose, embedded by the sqlite
command's centroid stub) and --edges edges between them with a skewed degree
distribution (one end of each edge uniform, the other drawn by a Zipf law
over a random ranking of the entities: a few hubs with hundreds of edges,
most entities with a handful), mixed relations and sources (manual and
llm-extraction) and confidences uniform in 0.3-1.0. It is written with the
bulk import calls (ImportEntities, ImportEdges). PostgreSQL keeps it in
--schema and reuses it (its edges table vacuumed before the profiles, as
autovacuum keeps it); SQLite in --path (reused) or a temporary file.
Then, one call at a time, after a warm-up pass over the seeds:
  depth 1            Client.Expand, depth 1, default node cap (100)
  depth 2            Client.Expand, depth 2, default node cap (100)
  depth 3, cap 200   Client.Expand, depth 3, MaxNodes 200
from --seeds random entities, --rounds times; then Client.LinkNeighborsBatch
over every entity (pgm-admin link-neighbors' engine, default similarity and
neighbour count) and the Expand profiles again over the denser graph.`, stderr)
	fs.StringVar(&backends, "backend", "postgres,sqlite", "comma-separated backends to measure: postgres, sqlite")
	fs.StringVar(&o.databaseURL, "database-url", defaultDatabaseURL(), "PostgreSQL URL (default $DATABASE_URL, else the loopback test cluster)")
	fs.StringVar(&o.schema, "schema", "postgram_bench_graph", "PostgreSQL schema holding the fixture (created if missing; connected with search_path=<schema>,public)")
	fs.BoolVar(&o.reset, "reset", false, "drop and rebuild the fixture (the PostgreSQL schema, the --path file)")
	fs.StringVar(&o.path, "path", "", "SQLite file for the fixture (kept and reused; default: a temporary file)")
	fs.IntVar(&o.entities, "entities", 10000, "entities in the fixture")
	fs.IntVar(&o.edges, "edges", 50000, "edges in the fixture")
	fs.IntVar(&o.dims, "dims", 1024, "embedding dimensions")
	fs.IntVar(&o.seeds, "seeds", 250, "distinct random seed entities per Expand profile")
	fs.IntVar(&o.rounds, "rounds", 2, "measured passes over the seeds")
	fs.Uint64Var(&o.seed, "seed", defaultSeed, "seed of the generated entities, edges and seed choice")
	fs.IntVar(&o.maxConns, "max-conns", 10, "PostgreSQL pool size")
	fs.IntVar(&o.concurrency, "concurrency", 4, "entities LinkNeighborsBatch processes at once (pgm-admin link-neighbors' default)")
	fs.BoolVar(&o.noNeighbors, "no-neighbors", false, "skip LinkNeighborsBatch and the profiles after it")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the Expand measurements to FILE.<backend>")
	fs.BoolVar(&o.assert, "assert", false, "exit with status 3 when a target is missed")
	code := parseFlags(fs, args, func() error {
		for _, b := range strings.Split(backends, ",") {
			b = strings.TrimSpace(b)
			switch b {
			case "postgres", "sqlite":
				if !slices.Contains(o.backends, b) {
					o.backends = append(o.backends, b)
				}
			default:
				return fmt.Errorf("--backend: %q is not postgres or sqlite", b)
			}
		}
		switch {
		case o.entities < 2:
			return errors.New("--entities must be at least 2")
		case o.edges < 1 || int64(o.edges) > int64(o.entities)*int64(o.entities-1)/4:
			return fmt.Errorf("--edges must be between 1 and entities×(entities-1)/4 (%d)", int64(o.entities)*int64(o.entities-1)/4)
		case o.dims < 1 || o.dims > 16000:
			return errors.New("--dims must be between 1 and 16000")
		case o.seeds < 1 || o.seeds > o.entities:
			return errors.New("--seeds must be between 1 and --entities")
		case o.rounds < 1:
			return errors.New("--rounds must be positive")
		case o.maxConns < 1 || o.concurrency < 1:
			return errors.New("--max-conns and --concurrency must be positive")
		}
		return checkSchemaName(o.schema)
	})
	return o, code
}

func runGraph(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code := parseGraphFlags(args, stderr)
	if code >= 0 {
		return code
	}
	b := &graphBench{o: o, out: stdout, log: stderr, start: time.Now()}
	missed, err := b.run(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "postgram-bench graph:", err)
		return exitError
	}
	if missed && o.assert {
		return exitTarget
	}
	return exitOK
}

// graphBench holds one graph run's state.
type graphBench struct {
	o     graphOptions
	out   io.Writer
	log   io.Writer
	start time.Time
	gf    *graphFixture
}

func (b *graphBench) logf(format string, args ...any) { logf(b.log, b.start, format, args...) }

// run measures every backend and reports whether a target was missed.
func (b *graphBench) run(ctx context.Context) (bool, error) {
	o := b.o
	b.gf = newGraphFixture(o.seed, o.entities, o.edges)
	fmt.Fprintf(b.out, "postgram-bench graph\n")
	fmt.Fprintf(b.out, "  client    %s %s/%s, GOMAXPROCS=%d, NumCPU=%d\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintf(b.out, "  library   %s\n", buildInfo())
	fmt.Fprintf(b.out, "  fixture   %d entities, %d edges (max degree %d, median %d, %d entities with ≥ 100), %d dims, seed %d\n",
		o.entities, o.edges, b.gf.maxDegree(), b.gf.medianDegree(), b.gf.degreeAtLeast(100), o.dims, o.seed)
	fmt.Fprintf(b.out, "  profiles  %d seeds × %d rounds after a warm-up pass, sequential\n", o.seeds, o.rounds)
	missed := false
	for _, backend := range o.backends {
		var m bool
		var err error
		switch backend {
		case "postgres":
			m, err = b.runPostgres(ctx)
		case "sqlite":
			m, err = b.runSQLite(ctx)
		}
		if err != nil {
			return missed, fmt.Errorf("%s: %w", backend, err)
		}
		missed = missed || m
	}
	printFooter(b.out, b.start)
	return missed, nil
}

func (b *graphBench) runPostgres(ctx context.Context) (bool, error) {
	o := b.o
	dsn, err := dsnWithSearchPath(o.databaseURL, o.schema)
	if err != nil {
		return false, err
	}
	st, err := openStore(ctx, dsn, o.maxConns)
	if err != nil {
		return false, err
	}
	defer st.Close()
	if err := prepareSchema(ctx, st, o.schema, o.reset); err != nil {
		return false, err
	}
	tables, err := schemaTables(ctx, st, o.schema)
	if err != nil {
		return false, err
	}
	if err := st.Migrate(ctx); err != nil {
		return false, err
	}
	var status string
	reused, err := b.gf.present(ctx, st, o.dims)
	switch {
	case err != nil:
		return false, err
	case reused:
		status = "reused the fixture in schema " + o.schema
	case tables > 0:
		return false, fmt.Errorf("schema %s has %d tables but not this fixture; pass --reset to drop and rebuild it", o.schema, tables)
	default:
		t0 := time.Now()
		// Bulk-load without the HNSW index, then build it in one pass
		// (EnsureModel recreates it): inserting 10,000 vectors one by one
		// into the graph costs several times more.
		emb := newCentroidEmbedder(o.dims, o.seed)
		modelID, err := st.EnsureModel(ctx, emb.Model())
		if err != nil {
			return false, err
		}
		if err := exec(ctx, st, fmt.Sprintf(`DROP INDEX IF EXISTS "%s".chunks_embedding_hnsw_m%d`, o.schema, modelID)); err != nil {
			return false, err
		}
		if err := b.gf.build(ctx, st, emb, modelID, b.logf); err != nil {
			return false, fmt.Errorf("build fixture: %w", err)
		}
		t1 := time.Now()
		if _, err := st.EnsureModel(ctx, emb.Model()); err != nil {
			return false, fmt.Errorf("build the vector index: %w", err)
		}
		b.logf("build: HNSW index built in %s", time.Since(t1).Round(time.Millisecond))
		if err := analyze(ctx, st, o.schema); err != nil {
			return false, err
		}
		status = fmt.Sprintf("built in %.1fs in schema %s", time.Since(t0).Seconds(), o.schema)
	}
	// Measure the graph as autovacuum keeps it, not the transient right
	// after a bulk load or after an earlier run's neighbour edges are
	// deleted (dead tuples, a visibility map not yet set, so index-only
	// scans visit the heap): vacuum the edges once those are gone.
	if n, err := b.gf.dropNeighborEdges(ctx, st); err != nil {
		return false, err
	} else if n > 0 {
		b.logf("postgres: removed %d semantic-neighbor edges of an earlier run", n)
	}
	if err := exec(ctx, st, `VACUUM (ANALYZE) "`+o.schema+`".edges`); err != nil {
		return false, fmt.Errorf("vacuum edges: %w", err)
	}
	title := fmt.Sprintf("PostgreSQL (%s)", serverInfo(ctx, st))
	return b.measure(ctx, "postgres", title, status, st)
}

func (b *graphBench) runSQLite(ctx context.Context) (bool, error) {
	o := b.o
	path := o.path
	if path == "" {
		dir, err := os.MkdirTemp("", "postgram-bench-graph-")
		if err != nil {
			return false, err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "graph.db")
	} else if o.reset {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return false, err
			}
		}
	}
	_, statErr := os.Stat(path)
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		return false, err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return false, err
	}
	var status string
	reused, err := b.gf.present(ctx, st, o.dims)
	switch {
	case err != nil:
		return false, err
	case reused:
		status = "reused the fixture in " + path
	case statErr == nil:
		return false, fmt.Errorf("%s exists but does not hold this fixture; pass --reset to rebuild it", path)
	default:
		t0 := time.Now()
		emb := newCentroidEmbedder(o.dims, o.seed)
		modelID, err := st.EnsureModel(ctx, emb.Model())
		if err != nil {
			return false, err
		}
		if err := b.gf.build(ctx, st, emb, modelID, b.logf); err != nil {
			return false, fmt.Errorf("build fixture: %w", err)
		}
		status = fmt.Sprintf("built in %.1fs in %s", time.Since(t0).Seconds(), path)
		if o.path == "" {
			status = fmt.Sprintf("built in %.1fs in a temporary file", time.Since(t0).Seconds())
		}
	}
	return b.measure(ctx, "sqlite", "SQLite (embedded)", status, st)
}

// expandProfile is one Expand configuration.
type expandProfile struct {
	name   string
	opts   postgram.ExpandOptions
	target time.Duration // 0: none
}

var expandProfiles = []expandProfile{
	{name: "depth 1", opts: postgram.ExpandOptions{Depth: 1}},
	{name: "depth 2", opts: postgram.ExpandOptions{Depth: 2}, target: graphTargetDepth2},
	{name: "depth 3, cap 200", opts: postgram.ExpandOptions{Depth: 3, MaxNodes: 200}, target: graphTargetDepth3},
}

// expandResult is one profile's measurements.
type expandResult struct {
	name      string
	graph     string // "fixture" or "+neighbours"
	lat       summary
	nodes     float64 // mean entities returned
	edges     float64 // mean edges returned
	truncated int
	allocs    float64 // heap allocations per call (whole process)
	bytes     float64 // heap bytes allocated per call
	target    time.Duration
}

// neighborResult is the LinkNeighborsBatch run.
type neighborResult struct {
	stats  postgram.NeighborStats
	stored int // semantic-neighbor edges in the store afterwards
	total  int // all edges afterwards
	wall   time.Duration
}

// measure runs the profiles and link-neighbors on one backend's store and
// prints its tables; it reports whether a target was missed.
func (b *graphBench) measure(ctx context.Context, backend, title, status string, st driver.Storage) (bool, error) {
	o := b.o
	fmt.Fprintf(b.out, "\n%s: %s; load average before: %s\n", backend, status, loadAvg())
	if n, err := b.gf.dropNeighborEdges(ctx, st); err != nil {
		return false, err
	} else if n > 0 {
		b.logf("%s: removed %d semantic-neighbor edges of an earlier run", backend, n)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st})
	if err != nil {
		return false, err
	}
	r := rand.New(rand.NewPCG(o.seed, 0x6772617068736565))
	seeds := make([]uuid.UUID, o.seeds)
	for i, k := range r.Perm(o.entities)[:o.seeds] {
		seeds[i] = b.gf.entityID(k)
	}
	var stopProfile func()
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile + "." + backend)
		if err != nil {
			return false, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return false, err
		}
		stopProfile = pprof.StopCPUProfile
		defer func() {
			if stopProfile != nil {
				stopProfile()
			}
		}()
	}
	var results []expandResult
	for _, p := range expandProfiles {
		b.logf("%s: %s over %d seeds", backend, p.name, len(seeds))
		res, err := measureExpand(ctx, c, p, seeds, o.rounds)
		if err != nil {
			return false, fmt.Errorf("%s: %w", p.name, err)
		}
		res.graph = "fixture"
		results = append(results, res)
	}
	if stopProfile != nil {
		stopProfile()
		stopProfile = nil
	}
	loadExpand := loadAvg()
	var nr *neighborResult
	loadLink := ""
	if !o.noNeighbors {
		b.logf("%s: LinkNeighborsBatch over every entity, concurrency %d", backend, o.concurrency)
		t0 := time.Now()
		var done atomic.Int64
		stop := ticker(10*time.Second, func() { b.logf("%s: link-neighbors: %d entities", backend, done.Load()) })
		stats, err := operator(c).LinkNeighborsBatch(ctx, postgram.NeighborScope{Concurrency: o.concurrency}, postgram.NeighborOptions{},
			func(*postgram.NeighborResult) { done.Add(1) })
		stop()
		if err != nil {
			return false, fmt.Errorf("link neighbors: %w", err)
		}
		nr = &neighborResult{stats: stats, wall: time.Since(t0)}
		loadLink = loadAvg()
		ne, err := st.FindEdges(ctx, workspace, driver.EdgeQuery{Sources: []string{postgram.EdgeSourceNeighbor}})
		if err != nil {
			return false, err
		}
		nr.stored = len(ne)
		s, err := st.Stats(ctx, workspace)
		if err != nil {
			return false, err
		}
		nr.total = s.Edges
		for _, p := range expandProfiles {
			b.logf("%s: %s over %d seeds, with the neighbour edges", backend, p.name, len(seeds))
			res, err := measureExpand(ctx, c, p, seeds, o.rounds)
			if err != nil {
				return false, fmt.Errorf("%s: %w", p.name, err)
			}
			res.graph = fmt.Sprintf("+neighbours (%d edges)", nr.total)
			res.target = 0 // the targets are for the fixture graph
			results = append(results, res)
		}
	}

	missed := false
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		missed = true
		return "NOT met"
	}
	t := newTable(fmt.Sprintf("%s: Client.Expand, %d entities, %d edges, %d seeds × %d rounds, warm, times in ms", title, o.entities, o.edges, o.seeds, o.rounds),
		"profile", "graph", "calls", "p50", "p95", "p99", "mean", "max", "nodes", "edges", "truncated", "allocs/op", "KiB/op", "target")
	for _, r := range results {
		tgt := ""
		if r.target > 0 {
			tgt = fmt.Sprintf("p95 ≤ %s: %s", ms(r.target), verdict(r.lat.P95 <= r.target))
		}
		t.add(r.name, r.graph, fmt.Sprint(r.lat.N), ms(r.lat.P50), ms(r.lat.P95), ms(r.lat.P99), ms(r.lat.Mean), ms(r.lat.Max),
			fmt.Sprintf("%.1f", r.nodes), fmt.Sprintf("%.1f", r.edges), fmt.Sprint(r.truncated),
			fmt.Sprintf("%.0f", r.allocs), fmt.Sprintf("%.0f", r.bytes/1024), tgt)
	}
	if err := t.write(b.out); err != nil {
		return false, err
	}
	fmt.Fprintf(b.out, "load average after the fixture profiles: %s\n", loadExpand)
	if nr != nil {
		t := newTable(fmt.Sprintf("%s: Client.LinkNeighborsBatch over all entities (min similarity 0.65, max 10 neighbours, concurrency %d)", title, o.concurrency),
			"entities", "linked", "skipped", "edges written", "neighbour edges stored", "wall s", "entities/s", "target")
		t.add(fmt.Sprint(nr.stats.Entities), fmt.Sprint(nr.stats.Linked), fmt.Sprint(nr.stats.Skipped), fmt.Sprint(nr.stats.Edges),
			fmt.Sprint(nr.stored), fmt.Sprintf("%.1f", nr.wall.Seconds()), perSec(rate(nr.stats.Entities, nr.wall)),
			fmt.Sprintf("≤ %.0f s: %s", graphTargetLink.Seconds(), verdict(nr.wall <= graphTargetLink)))
		if err := t.write(b.out); err != nil {
			return false, err
		}
		fmt.Fprintf(b.out, "load average after link-neighbors: %s; at the end: %s\n", loadLink, loadAvg())
	}
	return missed, nil
}

// measureExpand runs one warm-up pass over seeds, then rounds measured ones.
func measureExpand(ctx context.Context, c *postgram.Client, p expandProfile, seeds []uuid.UUID, rounds int) (expandResult, error) {
	res := expandResult{name: p.name, target: p.target}
	for _, id := range seeds {
		if _, err := c.Expand(ctx, id, p.opts); err != nil {
			return res, err
		}
	}
	lat := make([]time.Duration, 0, rounds*len(seeds))
	var nodes, edges int
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for range rounds {
		for _, id := range seeds {
			t := time.Now()
			g, err := c.Expand(ctx, id, p.opts)
			lat = append(lat, time.Since(t))
			if err != nil {
				return res, err
			}
			nodes += len(g.Entities)
			edges += len(g.Edges)
			if g.Truncated {
				res.truncated++
			}
		}
	}
	runtime.ReadMemStats(&m1)
	n := float64(len(lat))
	res.lat = summarize(lat)
	res.nodes, res.edges = float64(nodes)/n, float64(edges)/n
	res.allocs = float64(m1.Mallocs-m0.Mallocs) / n
	res.bytes = float64(m1.TotalAlloc-m0.TotalAlloc) / n
	return res, nil
}

// loadAvg returns the 1, 5 and 15 minute load averages ("?" off Linux).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// graphRelations are the fixture's relations with their weights.
var graphRelations = []struct {
	name   string
	weight int
}{
	{"mentions", 30}, {"related_to", 15}, {"works_on", 12}, {"part_of", 10}, {"depends_on", 8},
	{"references", 8}, {"owned_by", 6}, {"blocks", 4}, {"follows_up", 4}, {"decided_in", 3},
}

// graphFixture is the deterministic graph: entity i's id and content and
// the edge list depend only on the seed and the sizes.
type graphFixture struct {
	seed     uint64
	entities int
	edges    []postgram.Edge
	degree   []int
	text     *Fixture
	base     time.Time
}

func newGraphFixture(seed uint64, entities, edges int) *graphFixture {
	text, _ := NewFixture(seed, entities, entities, 0) // every entity one chunk
	g := &graphFixture{seed: seed, entities: entities, degree: make([]int, entities), text: text,
		base: time.Date(2024, 6, 11, 9, 0, 0, 0, time.UTC)}
	g.edges = g.genEdges(edges)
	return g
}

// randomUUID draws a version 4 UUID from r.
func randomUUID(r *rand.Rand) uuid.UUID {
	var u uuid.UUID
	binary.LittleEndian.PutUint64(u[:8], r.Uint64())
	binary.LittleEndian.PutUint64(u[8:], r.Uint64())
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// entityID is entity i's id.
func (g *graphFixture) entityID(i int) uuid.UUID {
	return randomUUID(rand.New(rand.NewPCG(g.seed^0x656e74697479, uint64(graphFixtureVersion)<<40|uint64(i))))
}

// genEdges draws n distinct edges (by source, target and relation).
func (g *graphFixture) genEdges(n int) []postgram.Edge {
	r := rand.New(rand.NewPCG(g.seed, 0x6564676573^uint64(g.entities)))
	rank := r.Perm(g.entities) // Zipf rank k is entity rank[k]
	z := rand.NewZipf(r, 1.1, 10, uint64(g.entities-1))
	pick := func() int {
		if r.IntN(2) == 0 {
			return r.IntN(g.entities)
		}
		return rank[z.Uint64()]
	}
	total := 0
	for _, rel := range graphRelations {
		total += rel.weight
	}
	type key struct {
		a, b int
		rel  string
	}
	seen := make(map[key]bool, n)
	ids := rand.New(rand.NewPCG(g.seed^0x656467656964, uint64(graphFixtureVersion)<<40|uint64(g.entities)))
	out := make([]postgram.Edge, 0, n)
	for len(out) < n {
		a, b := pick(), pick()
		if a == b {
			continue
		}
		w := r.IntN(total)
		rel := graphRelations[0].name
		for _, x := range graphRelations {
			if w < x.weight {
				rel = x.name
				break
			}
			w -= x.weight
		}
		conf := math.Round((0.3+0.7*r.Float64())*1000) / 1000
		llm := r.IntN(10) < 6
		k := key{a, b, rel}
		if seen[k] {
			continue
		}
		seen[k] = true
		g.degree[a]++
		g.degree[b]++
		at := g.base.Add(time.Duration(g.entities+len(out)) * time.Second)
		e := postgram.Edge{ID: randomUUID(ids), SourceID: g.entityID(a), TargetID: g.entityID(b), Relation: rel,
			Confidence: conf, Source: postgram.EdgeSourceManual, Metadata: map[string]any{}, CreatedAt: at, UpdatedAt: at}
		if llm {
			origin := e.SourceID
			e.Source, e.OriginID = postgram.EdgeSourceLLM, &origin
			e.Provider, e.Model, e.PromptVersion = "bench", "stub-extractor", "1"
			e.Metadata = map[string]any{"evidence": fmt.Sprintf("sentence %d", 1+r.IntN(12))}
		}
		out = append(out, e)
	}
	return out
}

func (g *graphFixture) maxDegree() int { return slices.Max(g.degree) }

func (g *graphFixture) medianDegree() int {
	d := slices.Clone(g.degree)
	slices.Sort(d)
	return d[len(d)/2]
}

func (g *graphFixture) degreeAtLeast(n int) int {
	c := 0
	for _, d := range g.degree {
		if d >= n {
			c++
		}
	}
	return c
}

// record returns entity i as stored, with its chunks and their embeddings
// (filled in by the caller).
func (g *graphFixture) record(i int) *driver.EntityRecord {
	in := g.text.Entity(i)
	at := g.base.Add(time.Duration(i) * time.Second)
	status := postgram.StatusActive
	if in.Type == postgram.TypeTask {
		status = postgram.StatusInbox
	}
	meta := "{}"
	if in.Type == postgram.TypeMemory {
		meta = `{"memory_role":"` + string(postgram.RoleDurableMemory) + `"}`
	}
	tags := slices.Clone(in.Tags)
	slices.Sort(tags)
	tags = slices.Compact(tags)
	rec := &driver.EntityRecord{
		Entity: postgram.Entity{ID: g.entityID(i), Type: in.Type, Content: in.Content, Visibility: postgram.VisibilityShared,
			Owner: in.Owner, Status: status, Tags: tags, Source: in.Source, Version: 1,
			EnrichmentStatus: postgram.StageCompleted, ExtractionStatus: postgram.StageSkipped, CreatedAt: at, UpdatedAt: at},
		Metadata: []byte(meta),
	}
	cr := rand.New(rand.NewPCG(g.seed^0x6368756e6b, uint64(i)))
	for _, p := range chunk.Split(in.Content, chunkCfg) {
		rec.Chunks = append(rec.Chunks, driver.ChunkRecord{ID: randomUUID(cr), Index: p.Index, Content: p.Text, Start: p.Start, End: p.End})
	}
	return rec
}

// build imports the entities (with embeddings) and the edges into st.
// modelID is emb's model in st.
func (g *graphFixture) build(ctx context.Context, st driver.Storage, emb *centroidEmbedder, modelID int64, logf func(string, ...any)) error {
	t0 := time.Now()
	const batch = 250
	err := parallel(ctx, 2, (g.entities+batch-1)/batch, func(ctx context.Context, k int) error {
		recs := make([]*driver.EntityRecord, 0, batch)
		var texts []string
		for i := k * batch; i < min(g.entities, (k+1)*batch); i++ {
			rec := g.record(i)
			recs = append(recs, rec)
			for _, c := range rec.Chunks {
				texts = append(texts, c.Content)
			}
		}
		vecs, err := emb.EmbedBatch(ctx, texts)
		if err != nil {
			return err
		}
		j := 0
		for _, rec := range recs {
			for ci := range rec.Chunks {
				rec.Chunks[ci].Embedding = vecs[j]
				j++
			}
		}
		n, err := st.ImportEntities(ctx, workspace, modelID, recs, false)
		if err == nil && n != len(recs) {
			err = fmt.Errorf("imported %d of %d entities", n, len(recs))
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("import entities: %w", err)
	}
	logf("build: imported %d entities with embeddings in %s", g.entities, time.Since(t0).Round(time.Millisecond))
	t1 := time.Now()
	const edgeBatch = 2500
	for start := 0; start < len(g.edges); start += edgeBatch {
		part := g.edges[start:min(start+edgeBatch, len(g.edges))]
		n, err := st.ImportEdges(ctx, workspace, part, false)
		if err == nil && n != len(part) {
			err = fmt.Errorf("imported %d of %d edges", n, len(part))
		}
		if err != nil {
			return fmt.Errorf("import edges: %w", err)
		}
	}
	logf("build: imported %d edges in %s", len(g.edges), time.Since(t1).Round(time.Millisecond))
	return nil
}

// present reports whether st holds this fixture: the entity and edge
// counts (semantic-neighbor edges aside), the first and last entity and
// edge, and the embedding model.
func (g *graphFixture) present(ctx context.Context, st driver.Storage, dims int) (bool, error) {
	_, m, ok, err := st.ActiveModel(ctx)
	if err != nil || !ok {
		return false, err
	}
	if m != newCentroidEmbedder(dims, g.seed).Model() {
		return false, nil
	}
	s, err := st.Stats(ctx, workspace)
	if err != nil {
		return false, err
	}
	if s.Entities != g.entities || s.EmbeddedChunks != g.entities || s.Edges < len(g.edges) {
		return false, nil
	}
	ents, err := st.GetEntities(ctx, workspace, []uuid.UUID{g.entityID(0), g.entityID(g.entities - 1)})
	if err != nil || len(ents) != 2 {
		return false, err
	}
	for _, e := range []postgram.Edge{g.edges[0], g.edges[len(g.edges)-1]} {
		if _, err := st.GetEdge(ctx, workspace, e.ID); errors.Is(err, postgram.ErrNotFound) {
			return false, nil
		} else if err != nil {
			return false, err
		}
	}
	ne, err := st.FindEdges(ctx, workspace, driver.EdgeQuery{Sources: []string{postgram.EdgeSourceNeighbor}})
	if err != nil {
		return false, err
	}
	return s.Edges-len(ne) == len(g.edges), nil
}

// dropNeighborEdges deletes the semantic-neighbor edges an earlier run's
// link-neighbors wrote, so that every run starts from the fixture graph.
func (g *graphFixture) dropNeighborEdges(ctx context.Context, st driver.Storage) (int, error) {
	ne, err := st.FindEdges(ctx, workspace, driver.EdgeQuery{Sources: []string{postgram.EdgeSourceNeighbor}})
	if err != nil {
		return 0, err
	}
	removed := 0
	for start := 0; start < len(ne); start += 1000 {
		part := ne[start:min(start+1000, len(ne))]
		ids := make([]uuid.UUID, len(part))
		for i, e := range part {
			ids[i] = e.ID
		}
		n, err := st.DeleteEdges(ctx, workspace, ids, nil)
		if err != nil {
			return removed, err
		}
		removed += n
	}
	return removed, nil
}
