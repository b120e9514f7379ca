package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/postgram-go/postgram"
)

// tasksOptions are the tasks subcommand's flags.
type tasksOptions struct {
	backendFlags
	tasks    int
	contexts int
	queries  int
	workers  int
	seed     uint64
	assert   bool
}

func parseTasksFlags(args []string, stderr io.Writer) (tasksOptions, int) {
	var o tasksOptions
	var list string
	fs := newFlagSet("tasks", `Measures GTD task lists: --tasks tasks spread over --contexts contexts
(@ctx00, ...; mixed statuses, half with a due date, created through
Client.CreateTask), then --queries calls of Client.ListTasks filtered by
context (the default page of 50, newest first, with the total), cycling
through the contexts, and as many filtered by context and status next.
Every query runs once before the measured pass. Target: p95 of the
context-filtered list at most 5 ms.`, stderr)
	o.backendFlags.register(fs, "postgram_bench_tasks", &list)
	fs.IntVar(&o.tasks, "tasks", 10000, "tasks to create")
	fs.IntVar(&o.contexts, "contexts", 20, "distinct GTD contexts")
	fs.IntVar(&o.queries, "queries", 400, "measured list calls per query kind (at least 200 for the target)")
	fs.IntVar(&o.workers, "workers", 8, "concurrent CreateTask goroutines while building the fixture")
	fs.Uint64Var(&o.seed, "seed", defaultSeed, "seed of the generated tasks")
	fs.BoolVar(&o.assert, "assert", false, "exit 3 when the target is missed")
	code := parseFlags(fs, args, func() error {
		switch {
		case o.tasks < 1:
			return errors.New("--tasks must be positive")
		case o.contexts < 1 || o.contexts > 100:
			return errors.New("--contexts must be between 1 and 100")
		case o.queries < 1:
			return errors.New("--queries must be positive")
		case o.workers < 1:
			return errors.New("--workers must be positive")
		}
		return o.backendFlags.check(list)
	})
	return o, code
}

func runTasksBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code := parseTasksFlags(args, stderr)
	if code >= 0 {
		return code
	}
	met, err := tasksBench(ctx, o, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "postgram-bench tasks: %v\n", err)
		return exitError
	}
	if o.assert && !met {
		return exitTarget
	}
	return exitOK
}

func benchContext(i int) string { return fmt.Sprintf("@ctx%02d", i) }

// taskInput is generated task i: its context is i mod contexts.
func taskInput(o tasksOptions, vocab *Vocabulary, i int) postgram.TaskInput {
	r := rand.New(rand.NewPCG(o.seed^0x7461736b73, uint64(i)+1))
	statuses := []postgram.Status{postgram.StatusInbox, postgram.StatusNext, postgram.StatusNext, postgram.StatusWaiting,
		postgram.StatusScheduled, postgram.StatusSomeday, postgram.StatusDone}
	in := postgram.TaskInput{
		Content: ContentOfSize(vocab, o.seed, i, 60+r.IntN(120)),
		Context: benchContext(i % o.contexts),
		Status:  statuses[r.IntN(len(statuses))],
		Tags:    []string{teamTags[r.IntN(len(teamTags))]},
	}
	if r.IntN(2) == 0 {
		in.DueDate = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(365)).Format("2006-01-02")
	}
	return in
}

// tasksResult is one query kind on one backend.
type tasksResult struct {
	backend, kind string
	lat           summary
	rows, total   int // of the last call
}

func tasksBench(ctx context.Context, o tasksOptions, stdout, stderr io.Writer) (bool, error) {
	start := time.Now()
	tmp, err := os.MkdirTemp("", "postgram-bench-tasks-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(stdout, "postgram-bench tasks\n")
	fmt.Fprintf(stdout, "  client    %s %s/%s, GOMAXPROCS=%d, NumCPU=%d\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintf(stdout, "  library   %s\n", buildInfo())
	fmt.Fprintf(stdout, "  fixture   %d tasks in %d contexts (~%d each), mixed statuses, half with a due date\n", o.tasks, o.contexts, o.tasks/o.contexts)
	vocab := NewVocabulary(o.seed)
	var results []tasksResult
	var builds []string
	for _, name := range o.backends {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return false, err
		}
		b, err := openBackend(ctx, name, o.backendFlags, dir)
		if err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(stdout, "  %-9s %s\n", name, b.desc)
		rs, build, err := tasksBackend(ctx, b, o, vocab, stderr, start)
		b.close()
		if err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		results = append(results, rs...)
		builds = append(builds, build)
	}
	t := newTable(fmt.Sprintf("ListTasks over %d tasks, %d measured calls per row, page of %d (times in ms)", o.tasks, o.queries, postgram.DefaultListLimit),
		"backend", "filter", "p50", "p95", "p99", "max", "mean", "rows", "matched")
	for _, r := range results {
		t.add(r.backend, r.kind, ms(r.lat.P50), ms(r.lat.P95), ms(r.lat.P99), ms(r.lat.Max), ms(r.lat.Mean), strconv.Itoa(r.rows), strconv.Itoa(r.total))
	}
	if err := t.write(stdout); err != nil {
		return false, err
	}
	fmt.Fprintln(stdout)
	for _, s := range builds {
		fmt.Fprintln(stdout, s)
	}
	met := true
	for _, r := range results {
		if r.kind != "context" {
			continue
		}
		ok := r.lat.P95 <= 5*time.Millisecond
		met = met && ok
		fmt.Fprintf(stdout, "target %s: context-filtered list p95 %s ms (≤ 5: %s)\n", r.backend, ms(r.lat.P95), verdict(ok))
	}
	printFooter(stdout, start)
	return met, nil
}

// tasksBackend builds the fixture on b and measures the list queries.
func tasksBackend(ctx context.Context, b *benchBackend, o tasksOptions, vocab *Vocabulary, stderr io.Writer, start time.Time) ([]tasksResult, string, error) {
	c, err := postgram.New(ctx, postgram.Config{Store: b.store})
	if err != nil {
		return nil, "", err
	}
	logf(stderr, start, "%s: creating %d tasks", b.name, o.tasks)
	t0 := time.Now()
	err = parallel(ctx, o.workers, o.tasks, func(ctx context.Context, i int) error {
		_, err := c.CreateTask(ctx, taskInput(o, vocab, i))
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("create tasks: %w", err)
	}
	build := time.Since(t0)
	buildLine := fmt.Sprintf("%s: fixture built in %s (%s tasks/s, %d goroutines)", b.name, build.Round(10*time.Millisecond), perSec(rate(o.tasks, build)), o.workers)
	if b.analyze != nil {
		if err := b.analyze(ctx); err != nil {
			return nil, "", err
		}
		buildLine += ", then ANALYZE"
	}
	kinds := []struct {
		name string
		opts func(i int) postgram.TaskListOptions
	}{
		{"context", func(i int) postgram.TaskListOptions {
			return postgram.TaskListOptions{Context: benchContext(i % o.contexts)}
		}},
		{"context+status", func(i int) postgram.TaskListOptions {
			return postgram.TaskListOptions{Context: benchContext(i % o.contexts), Statuses: []postgram.Status{postgram.StatusNext}}
		}},
	}
	var out []tasksResult
	for _, k := range kinds {
		logf(stderr, start, "%s: %d lists by %s", b.name, o.queries, k.name)
		for i := range min(o.queries, o.contexts) { // warm-up: each distinct query once
			if _, err := c.ListTasks(ctx, k.opts(i)); err != nil {
				return nil, "", err
			}
		}
		lat := make([]time.Duration, o.queries)
		var last *postgram.ListPage
		for i := range o.queries {
			q := k.opts(i)
			t := time.Now()
			page, err := c.ListTasks(ctx, q)
			lat[i] = time.Since(t)
			if err != nil {
				return nil, "", err
			}
			for _, e := range page.Items {
				if e.Metadata["context"] != q.Context {
					return nil, "", fmt.Errorf("list by %s returned a task of context %v", q.Context, e.Metadata["context"])
				}
			}
			last = page
		}
		if k.name == "context" && last.Total != o.tasks/o.contexts && last.Total != o.tasks/o.contexts+1 {
			return nil, "", fmt.Errorf("a context matched %d tasks, want about %d", last.Total, o.tasks/o.contexts)
		}
		out = append(out, tasksResult{backend: b.name, kind: k.name, lat: summarize(lat), rows: len(last.Items), total: last.Total})
	}
	return out, buildLine, nil
}
