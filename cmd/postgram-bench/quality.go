package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/cmd/internal/config"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/quality"
	"github.com/postgram-go/postgram/internal/quality/synth"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/sqlite"
)

const qualitySynopsis = `Search quality on a labelled set: every query runs through the library's
Search and is scored against graded labels (nDCG@5, MRR@10, recall@10,
hit@1), per category and overall, for the dev and held-out splits.

By default the committed development set (` + synth.CommittedName + `) is loaded
into a fresh store (--store sqlite: a temporary file; postgres: a new schema
in --database-url) and embedded with the deterministic bag-of-words
embedder. With --existing the labels are run against the store the
server would open (DATABASE_URL, else POSTGRAM_DATA_DIR's postgram.db) with
its configured embedder (EMBEDDING_PROVIDER, ...), read only: the label
file then holds only query lines, and a relevance key is an entity id or
the value of metadata field --key-field.

Exit status 3 when an --assert floor is missed.`

type qualityOptions struct {
	labels      string
	store       string
	databaseURL string
	existing    bool
	memIndex    bool
	memHalf     bool
	memCands    int
	keyField    string
	rankings    []string
	split       string
	dims        int
	strategy    string
	limit       int
	assert      []quality.Floor
	assertSplit string
	notBelow    string
	explain     int
	jsonOut     bool
	workspace   string
	weights     *postgram.RankingWeights
}

func runQuality(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o qualityOptions
	fs := newFlagSet("quality", qualitySynopsis, stderr)
	fs.StringVar(&o.labels, "labels", "", "label file (JSONL); default: the committed development set")
	fs.StringVar(&o.store, "store", "sqlite", "backend to seed: sqlite or postgres")
	fs.StringVar(&o.databaseURL, "database-url", defaultDatabaseURL(), "PostgreSQL for --store postgres")
	fs.BoolVar(&o.memIndex, "memory-index", false, "with --store postgres: search on the store's in-process index (postgres.Config.MemoryIndex), loaded after seeding")
	fs.BoolVar(&o.memHalf, "memory-index-half", false, "with --memory-index: its vectors in half precision (postgres.Config.MemoryIndexHalf)")
	fs.IntVar(&o.memCands, "memory-index-candidates", 0, "with --memory-index: rank exactly only this many sign-code candidates per vector search (postgres.Config.MemoryIndexCandidates)")
	fs.BoolVar(&o.existing, "existing", false, "run against the configured store (as postgram-server opens it) without seeding")
	fs.StringVar(&o.keyField, "key-field", "bench_key", "metadata field holding an entity's label key")
	rankings := fs.String("ranking", "default", "comma-separated rankings to compare: default (the library's), seed, v2")
	fs.StringVar(&o.split, "split", "all", "queries to run: dev, heldout or all (each split is reported on its own)")
	fs.IntVar(&o.dims, "dims", 384, "embedding dimensions of the bag-of-words embedder (seeded stores)")
	fs.StringVar(&o.strategy, "strategy", "exact", "vector strategy: exact (relevance without ANN approximation), auto or hnsw")
	fs.IntVar(&o.limit, "limit", 10, "results per query")
	assert := fs.String("assert", "", "floors, e.g. ndcg5=0.85,each.ndcg5=0.70 (each.: every category); checked on --assert-split for the first ranking")
	fs.StringVar(&o.assertSplit, "assert-split", quality.SplitHeldOut, "split the floors apply to")
	fs.StringVar(&o.notBelow, "assert-not-below", "", "a ranking (e.g. seed) no category of the first ranking may score below on nDCG@5, on --assert-split")
	fs.IntVar(&o.explain, "explain", 0, "print the N worst queries of the first ranking with their results and explanations")
	fs.BoolVar(&o.jsonOut, "json", false, "print the reports as JSON")
	fs.StringVar(&o.workspace, "workspace", "default", "workspace searched (--existing)")
	weights := fs.String("weights", "", "ranking v2 weights to change from the defaults, e.g. b=0.5,head_weight=2 (names as in postgram.RankingWeights' JSON)")
	if code := parseFlags(fs, args, func() error {
		var err error
		o.rankings = nil
		for r := range strings.SplitSeq(*rankings, ",") {
			r = strings.TrimSpace(r)
			if r == "" {
				continue
			}
			if r != "default" && !postgram.RankingMode(r).Valid() {
				return fmt.Errorf("--ranking %q: want default, seed or v2", r)
			}
			o.rankings = append(o.rankings, r)
		}
		if len(o.rankings) == 0 {
			return fmt.Errorf("--ranking names no ranking")
		}
		switch o.store {
		case "sqlite", "postgres":
		default:
			return fmt.Errorf("--store %q: want sqlite or postgres", o.store)
		}
		if o.memIndex && (o.store != "postgres" || o.existing) {
			return fmt.Errorf("--memory-index needs --store postgres and a seeded store")
		}
		if (o.memHalf || o.memCands != 0) && !o.memIndex {
			return fmt.Errorf("--memory-index-half and --memory-index-candidates need --memory-index")
		}
		if o.memCands < 0 {
			return fmt.Errorf("--memory-index-candidates must not be negative")
		}
		switch o.split {
		case quality.SplitDev, quality.SplitHeldOut, "all":
		default:
			return fmt.Errorf("--split %q: want dev, heldout or all", o.split)
		}
		switch postgram.Strategy(o.strategy) {
		case postgram.StrategyExact, postgram.StrategyAuto, postgram.StrategyHNSW:
		default:
			return fmt.Errorf("--strategy %q: want exact, auto or hnsw", o.strategy)
		}
		if o.dims < 8 || o.dims > 4096 {
			return fmt.Errorf("--dims must be in 8..4096")
		}
		if o.limit < 1 || o.limit > 100 {
			return fmt.Errorf("--limit must be in 1..100")
		}
		if *assert != "" {
			if o.assert, err = quality.ParseFloors(*assert); err != nil {
				return fmt.Errorf("--assert: %w", err)
			}
		}
		if *weights != "" {
			w, err := parseWeights(*weights)
			if err != nil {
				return fmt.Errorf("--weights: %w", err)
			}
			o.weights = w
		}
		if o.notBelow != "" && !postgram.RankingMode(o.notBelow).Valid() {
			return fmt.Errorf("--assert-not-below %q: want seed or v2", o.notBelow)
		}
		return nil
	}); code >= 0 {
		return code
	}
	missed, err := qualityBench(ctx, o, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "postgram-bench quality:", err)
		return exitError
	}
	if missed {
		return exitTarget
	}
	return exitOK
}

// qualityRun is one ranking's reports, one per split.
type qualityRun struct {
	Ranking string                     `json:"ranking"`
	Reports map[string]*quality.Report `json:"reports"`
	// Latency of the searches (all splits).
	P50ms float64 `json:"p50_ms"`
	P95ms float64 `json:"p95_ms"`
}

func qualityBench(ctx context.Context, o qualityOptions, stdout, stderr io.Writer) (missed bool, err error) {
	data, name := synth.Committed, synth.CommittedName
	if o.labels != "" {
		if data, err = os.ReadFile(o.labels); err != nil {
			return false, fmt.Errorf("read labels: %w", err)
		}
		name = o.labels
	}
	set, err := quality.Parse(bytes.NewReader(data), name)
	if err != nil {
		return false, err
	}
	client, cleanup, err := qualityClient(ctx, o, set, stderr)
	if err != nil {
		return false, err
	}
	defer cleanup()
	names, err := resolveLabels(ctx, client, set, o.keyField, name)
	if err != nil {
		return false, err
	}
	splits := []string{quality.SplitDev, quality.SplitHeldOut}
	if o.split != "all" {
		splits = []string{o.split}
	}
	var runs []qualityRun
	for _, r := range o.rankings {
		run := qualityRun{Ranking: r, Reports: map[string]*quality.Report{}}
		var lat []time.Duration
		search := func(ctx context.Context, q quality.Query) ([]quality.Result, error) {
			req := postgram.SearchRequest{Query: q.Text, Limit: o.limit, Strategy: postgram.Strategy(o.strategy), Explain: o.explain > 0}
			if r != "default" {
				req.Ranking = postgram.RankingMode(r)
			}
			start := time.Now()
			resp, err := client.Search(ctx, req)
			lat = append(lat, time.Since(start))
			if err != nil {
				return nil, err
			}
			out := make([]quality.Result, len(resp.Results))
			for i, res := range resp.Results {
				out[i] = quality.Result{Names: names(res.Entity), Explain: explainLine(res)}
			}
			return out, nil
		}
		for _, sp := range splits {
			if len(set.Only(sp)) == 0 {
				continue
			}
			rep, err := quality.Run(ctx, set, sp, search)
			if err != nil {
				return false, err
			}
			run.Reports[sp] = rep
		}
		slices.Sort(lat)
		run.P50ms, run.P95ms = msOf(percentile(lat, 50)), msOf(percentile(lat, 95))
		runs = append(runs, run)
	}
	var problems []string
	if first := runs[0].Reports[o.assertSplit]; first != nil {
		if len(o.assert) > 0 {
			problems = append(problems, first.Check(o.assert)...)
		}
		if o.notBelow != "" {
			base, err := rankingReport(ctx, o, set, client, names, o.notBelow, runs)
			if err != nil {
				return false, err
			}
			for _, c := range first.Categories {
				for _, b := range base.Categories {
					if b.Category == c.Category && c.NDCG5 < b.NDCG5 {
						problems = append(problems, fmt.Sprintf("ndcg5 in %s %.3f < %s's %.3f", c.Category, c.NDCG5, o.notBelow, b.NDCG5))
					}
				}
			}
		}
	} else if len(o.assert) > 0 || o.notBelow != "" {
		return false, fmt.Errorf("--assert-split %q was not run (see --split)", o.assertSplit)
	}
	if o.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"labels": name, "store": o.storeName(), "runs": runs, "missed": problems}); err != nil {
			return false, err
		}
	} else {
		printQuality(stdout, name, o, set, runs)
		if o.explain > 0 {
			for _, sp := range splits {
				if rep := runs[0].Reports[sp]; rep != nil {
					printWorst(stdout, rep, o.explain, runs[0].Ranking)
				}
			}
		}
		for _, p := range problems {
			fmt.Fprintln(stdout, "MISSED:", p)
		}
		if len(o.assert) > 0 || o.notBelow != "" {
			if len(problems) == 0 {
				fmt.Fprintf(stdout, "floors met on the %s split\n", o.assertSplit)
			}
		}
	}
	return len(problems) > 0, nil
}

// rankingReport returns the assert split's report for ranking r, running
// it when it is not among runs.
func rankingReport(ctx context.Context, o qualityOptions, set *quality.Set, client *postgram.Client,
	names func(*postgram.Entity) []string, r string, runs []qualityRun) (*quality.Report, error) {
	for _, run := range runs {
		if run.Ranking == r {
			return run.Reports[o.assertSplit], nil
		}
	}
	return quality.Run(ctx, set, o.assertSplit, func(ctx context.Context, q quality.Query) ([]quality.Result, error) {
		resp, err := client.Search(ctx, postgram.SearchRequest{Query: q.Text, Limit: o.limit,
			Strategy: postgram.Strategy(o.strategy), Ranking: postgram.RankingMode(r)})
		if err != nil {
			return nil, err
		}
		out := make([]quality.Result, len(resp.Results))
		for i, res := range resp.Results {
			out[i] = quality.Result{Names: names(res.Entity)}
		}
		return out, nil
	})
}

func (o qualityOptions) storeName() string {
	if o.existing {
		return "existing"
	}
	return o.store
}

// qualityClient opens the store the run needs: a fresh one seeded with the
// set's entities and embedded, or (--existing) the configured one.
func qualityClient(ctx context.Context, o qualityOptions, set *quality.Set, stderr io.Writer) (*postgram.Client, func(), error) {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if o.existing {
		if len(set.Entities) > 0 {
			return nil, nil, fmt.Errorf("--existing runs labels against a store as it is: the label file must not hold entity lines (it has %d)", len(set.Entities))
		}
		env, err := config.Parse(os.Getenv)
		if err != nil {
			return nil, nil, err
		}
		st, err := env.OpenStore(ctx, log)
		if err != nil {
			return nil, nil, err
		}
		emb, err := env.Embedder()
		if err != nil {
			st.Close()
			return nil, nil, err
		}
		cfg := env.ClientConfig(st, emb, log)
		cfg.Workspace = o.workspace
		cfg.Search.Weights = o.weights
		c, err := postgram.New(ctx, cfg)
		if err != nil {
			st.Close()
			return nil, nil, err
		}
		return c, func() { st.Close() }, nil
	}
	if len(set.Entities) == 0 {
		return nil, nil, fmt.Errorf("the label file has no entity lines to seed a store with (use --existing for a store of your own)")
	}
	var (
		st      driver.Storage
		cleanup func()
	)
	switch o.store {
	case "sqlite":
		dir, err := os.MkdirTemp("", "postgram-quality-")
		if err != nil {
			return nil, nil, err
		}
		s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "quality.db")})
		if err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
		st, cleanup = s, func() { s.Close(); os.RemoveAll(dir) }
	default:
		schema := fmt.Sprintf("quality_%d", time.Now().UnixNano())
		admin, err := openStore(ctx, o.databaseURL, 2)
		if err != nil {
			return nil, nil, err
		}
		if err := prepareSchema(ctx, admin, schema, true); err != nil {
			admin.Close()
			return nil, nil, err
		}
		dsn, err := dsnWithSearchPath(o.databaseURL, schema)
		if err != nil {
			admin.Close()
			return nil, nil, err
		}
		s, err := postgres.Open(ctx, postgres.Config{URL: dsn, MemoryIndex: o.memIndex, MemoryIndexHalf: o.memHalf, MemoryIndexCandidates: o.memCands})
		if err != nil {
			admin.Close()
			return nil, nil, err
		}
		st = s
		cleanup = func() {
			s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := dropSchema(ctx, admin, schema); err != nil {
				fmt.Fprintln(stderr, "postgram-bench quality:", err)
			}
			admin.Close()
		}
	}
	if err := st.(interface{ Migrate(context.Context) error }).Migrate(ctx); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("migrate: %w", err)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: postgramtest.NewEmbedder(o.dims), Logger: log,
		Search: postgram.SearchConfig{Weights: o.weights}})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	if err := seedQuality(ctx, c, set, o.keyField); err != nil {
		cleanup()
		return nil, nil, err
	}
	if o.memIndex {
		if err := st.(*postgres.Store).WarmMemoryIndex(ctx, postgram.DefaultWorkspace); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	return c, cleanup, nil
}

// seedQuality stores the set's entities (each with its key in metadata)
// and embeds them.
func seedQuality(ctx context.Context, c *postgram.Client, set *quality.Set, keyField string) error {
	for _, e := range set.Entities {
		md := map[string]any{}
		for k, v := range e.Metadata {
			md[k] = v
		}
		md[keyField] = e.Key
		in := postgram.StoreInput{Type: postgram.EntityType(e.Type), Content: e.Content, Tags: e.Tags,
			Visibility: postgram.Visibility(e.Visibility), Status: postgram.Status(e.Status), Metadata: md}
		if _, err := c.Store(ctx, in); err != nil {
			return fmt.Errorf("seed entity %q (line %d): %w", e.Key, set.EntityLine[e.Key], err)
		}
	}
	if _, err := operator(c).EnrichPending(ctx); err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	qs, err := c.QueueStatus(ctx, 0)
	if err != nil {
		return err
	}
	if qs.Embedding.Pending > 0 || qs.Embedding.Failed > 0 {
		return fmt.Errorf("embedding left %d pending and %d failed", qs.Embedding.Pending, qs.Embedding.Failed)
	}
	return nil
}

// resolveLabels checks that every relevance key names an entity of the
// store (by id or by metadata key field) and returns how a result is
// named for the labels.
func resolveLabels(ctx context.Context, c *postgram.Client, set *quality.Set, keyField, file string) (func(*postgram.Entity) []string, error) {
	known := map[string]bool{}
	const page = postgram.MaxListLimit
	for off := 0; ; off += page {
		p, err := c.List(ctx, postgram.ListOptions{Limit: page, Offset: off, IncludeArchived: true})
		if err != nil {
			return nil, fmt.Errorf("list entities: %w", err)
		}
		for _, e := range p.Items {
			for _, n := range entityNames(e, keyField) {
				known[n] = true
			}
		}
		if off+page >= p.Total || len(p.Items) == 0 {
			break
		}
	}
	for _, q := range set.Queries {
		for k := range q.Relevant {
			if !known[k] {
				return nil, fmt.Errorf("%s:%d: query %q: relevant names %q, which is neither an entity id nor a %q metadata value in the store",
					file, q.Line, q.ID, k, keyField)
			}
		}
	}
	return func(e *postgram.Entity) []string { return entityNames(e, keyField) }, nil
}

func entityNames(e *postgram.Entity, keyField string) []string {
	names := []string{e.ID.String()}
	if k, ok := e.Metadata[keyField].(string); ok && k != "" {
		names = append([]string{k}, names...)
	}
	return names
}

// explainLine condenses a result's explanation to one line.
func explainLine(r postgram.SearchResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "score %.4f", r.Score)
	if r.KeywordRank > 0 {
		fmt.Fprintf(&b, " kw#%d", r.KeywordRank)
	}
	if r.VectorRank > 0 {
		fmt.Fprintf(&b, " vec#%d", r.VectorRank)
	}
	if r.Similarity != nil {
		fmt.Fprintf(&b, " sim %.3f", *r.Similarity)
	}
	if r.Explain != nil {
		b.WriteString(" | ")
		b.WriteString(r.Explain.String())
	}
	return b.String()
}

func printQuality(w io.Writer, name string, o qualityOptions, set *quality.Set, runs []qualityRun) {
	fmt.Fprintf(w, "search quality: %s (%d entities, %d queries), store %s, vector strategy %s\n",
		name, len(set.Entities), len(set.Queries), o.storeName(), o.strategy)
	cats := set.Categories()
	for _, sp := range []string{quality.SplitDev, quality.SplitHeldOut} {
		if runs[0].Reports[sp] == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s split: nDCG@5 (MRR@10 / recall@10 / hit@1)\n", sp)
		header := []string{"category", "n"}
		for _, r := range runs {
			header = append(header, r.Ranking)
		}
		rows := [][]string{}
		cell := func(s quality.Summary) string {
			return fmt.Sprintf("%.3f (%.2f / %.2f / %.2f)", s.NDCG5, s.MRR10, s.Recall10, s.Hit1)
		}
		for _, c := range cats {
			row := []string{c, ""}
			for _, r := range runs {
				for _, cr := range r.Reports[sp].Categories {
					if cr.Category == c {
						row[1] = fmt.Sprint(cr.Queries)
						row = append(row, cell(cr.Summary))
					}
				}
			}
			if row[1] != "" {
				rows = append(rows, row)
			}
		}
		over := []string{"overall", fmt.Sprint(runs[0].Reports[sp].Overall.Queries)}
		for _, r := range runs {
			over = append(over, cell(r.Reports[sp].Overall))
		}
		rows = append(rows, over)
		t := newTable("", header...)
		for _, r := range rows {
			t.add(r...)
		}
		t.write(w)
	}
	fmt.Fprintln(w)
	for _, r := range runs {
		fmt.Fprintf(w, "%s: search p50 %.2f ms, p95 %.2f ms\n", r.Ranking, r.P50ms, r.P95ms)
	}
}

func printWorst(w io.Writer, rep *quality.Report, n int, ranking string) {
	fmt.Fprintf(w, "\nworst %d queries of the %s split (%s ranking):\n", n, rep.Split, ranking)
	for _, q := range rep.Worst(n) {
		fmt.Fprintf(w, "\n%s [%s] %q  nDCG@5 %.3f MRR %.2f\n", q.ID, q.Category, q.Text, q.Scores.NDCG5, q.Scores.MRR10)
		for i, r := range q.Top {
			fmt.Fprintf(w, "  %d. [%d] %s  %s\n", i+1, r.Grade, r.Key, r.Explain)
		}
		if len(q.Missing) > 0 {
			fmt.Fprintf(w, "  missing from the results: %s\n", strings.Join(q.Missing, ", "))
		}
	}
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// parseWeights applies "name=value,..." to the default ranking weights.
func parseWeights(spec string) (*postgram.RankingWeights, error) {
	w := postgram.DefaultRankingWeights()
	raw, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	for part := range strings.SplitSeq(spec, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("%q: want name=value", part)
		}
		if _, known := m[name]; !known {
			return nil, fmt.Errorf("%q: no weight named %q", part, name)
		}
		var v float64
		if err := json.Unmarshal([]byte(val), &v); err != nil {
			return nil, fmt.Errorf("%q: value is not a number", part)
		}
		m[name] = v
	}
	if raw, err = json.Marshal(m); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("%v", err)
	}
	return &w, nil
}
