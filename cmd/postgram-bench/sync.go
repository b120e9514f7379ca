package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/syncproto"
)

// --- backends shared by the sync and tasks benchmarks -------------------

// benchBackend is one store under test, opened fresh.
type benchBackend struct {
	name  string // sqlite or postgres
	store driver.Storage
	desc  string // for the header
	close func()
	// analyze refreshes planner statistics (PostgreSQL; nil elsewhere).
	analyze func(ctx context.Context) error
}

// backendFlags are the flags that choose and locate the backends.
type backendFlags struct {
	databaseURL string
	schema      string
	backends    []string
}

func (b *backendFlags) register(fs interface {
	StringVar(p *string, name, value, usage string)
}, defaultSchema string, list *string) {
	fs.StringVar(&b.databaseURL, "database-url", defaultDatabaseURL(), "PostgreSQL URL (default $DATABASE_URL, else the loopback test cluster)")
	fs.StringVar(&b.schema, "schema", defaultSchema, "PostgreSQL schema, dropped and recreated on every run (\"\": use the URL's own search_path as is; it must hold no Postgram data)")
	fs.StringVar(list, "backends", "sqlite,postgres", "comma-separated backends to measure: sqlite, postgres")
}

func (b *backendFlags) check(list string) error {
	b.backends = nil
	for _, s := range strings.Split(list, ",") {
		switch s = strings.TrimSpace(s); s {
		case "sqlite", "postgres":
			b.backends = append(b.backends, s)
		case "":
		default:
			return fmt.Errorf("--backends: unknown backend %q (sqlite, postgres)", s)
		}
	}
	if len(b.backends) == 0 {
		return errors.New("--backends names no backend")
	}
	if b.schema != "" {
		return checkSchemaName(b.schema)
	}
	return nil
}

// openBackend opens a fresh, migrated store: a new SQLite file in dir
// (durable commits, as postgram-server's default), or the PostgreSQL
// schema dropped and recreated.
func openBackend(ctx context.Context, name string, o backendFlags, dir string) (*benchBackend, error) {
	switch name {
	case "sqlite":
		path := filepath.Join(dir, "bench.db")
		st, err := sqlite.Open(ctx, sqlite.Config{Path: path, Durable: true})
		if err != nil {
			return nil, err
		}
		if err := st.Migrate(ctx); err != nil {
			st.Close()
			return nil, err
		}
		return &benchBackend{name: name, store: st, desc: "SQLite " + path + " (synchronous=FULL)", close: func() { st.Close() }}, nil
	case "postgres":
		dsn := o.databaseURL
		var err error
		if o.schema != "" {
			if dsn, err = dsnWithSearchPath(o.databaseURL, o.schema); err != nil {
				return nil, err
			}
		}
		st, err := openStore(ctx, dsn, 8)
		if err != nil {
			return nil, err
		}
		if o.schema != "" {
			if err := prepareSchema(ctx, st, o.schema, true); err != nil {
				st.Close()
				return nil, err
			}
			st.Close() // reconnect so that no pooled connection predates the new schema
			if st, err = openStore(ctx, dsn, 8); err != nil {
				return nil, err
			}
		}
		if err := st.Migrate(ctx); err != nil {
			st.Close()
			return nil, err
		}
		where := "schema " + o.schema + " (recreated)"
		if o.schema == "" {
			where = "the URL's search_path"
		}
		return &benchBackend{name: name, store: st, desc: redact(dsn) + ", " + where + "; " + serverInfo(ctx, st),
			close: func() { st.Close() },
			analyze: func(ctx context.Context) error {
				for _, t := range []string{"entities", "sync_files"} {
					if err := exec(ctx, st, "ANALYZE "+t); err != nil {
						return fmt.Errorf("analyze %s: %w", t, err)
					}
				}
				return nil
			}}, nil
	}
	return nil, fmt.Errorf("unknown backend %q", name)
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// --- postgram-bench sync -------------------------------------------------

// syncOptions are the sync subcommand's flags.
type syncOptions struct {
	backendFlags
	notes  int
	size   int
	seed   uint64
	assert bool
}

func parseSyncFlags(args []string, stderr io.Writer) (syncOptions, int) {
	var o syncOptions
	var list string
	fs := newFlagSet("sync", `Measures Markdown folder sync through the library: a generated tree of
--notes notes (nested folders, --size bytes each, a "# Title" heading) is
synced with syncproto.Sync over a transport that calls the Client directly
(diff, upload batches of at most 50 files / 4 MiB, finalize), first into an
empty store, then again with no change. Each phase is split into the
client's walk (reading and hashing the files) and the time spent in each
server call. Target: the no-change re-sync of 10,000 notes in at most 2 s.`, stderr)
	o.backendFlags.register(fs, "postgram_bench_sync", &list)
	fs.IntVar(&o.notes, "notes", 10000, "notes in the generated tree")
	fs.IntVar(&o.size, "size", 1500, "bytes of prose per note (before the heading)")
	fs.Uint64Var(&o.seed, "seed", defaultSeed, "seed of the generated text")
	fs.BoolVar(&o.assert, "assert", false, "exit 3 when the no-change target is missed")
	code := parseFlags(fs, args, func() error {
		switch {
		case o.notes < 1:
			return errors.New("--notes must be positive")
		case o.size < 1 || o.size > syncproto.MaxFileBytes-100:
			return fmt.Errorf("--size must be between 1 and %d", syncproto.MaxFileBytes-100)
		}
		return o.backendFlags.check(list)
	})
	return o, code
}

// runSyncBench is the sync subcommand.
func runSyncBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code := parseSyncFlags(args, stderr)
	if code >= 0 {
		return code
	}
	met, err := syncBench(ctx, o, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "postgram-bench sync: %v\n", err)
		return exitError
	}
	if o.assert && !met {
		return exitTarget
	}
	return exitOK
}

// benchNote is the path of generated note i.
func benchNote(i int) string {
	return fmt.Sprintf("area%02d/topic%02d/note%05d.md", i%20, (i/20)%25, i)
}

// writeNoteTree writes the generated notes under root and returns their
// total size and the number of folders.
func writeNoteTree(root string, o syncOptions) (int64, int, error) {
	vocab := NewVocabulary(o.seed)
	var bytes int64
	dirs := map[string]bool{}
	for i := range o.notes {
		p := filepath.Join(root, filepath.FromSlash(benchNote(i)))
		if !dirs[filepath.Dir(p)] {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return 0, 0, err
			}
			dirs[filepath.Dir(p)] = true
		}
		body := fmt.Sprintf("# Note %d\n\n%s\n", i, ContentOfSize(vocab, o.seed, i, o.size))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return 0, 0, err
		}
		bytes += int64(len(body))
	}
	return bytes, len(dirs), nil
}

// timedTransport calls the library directly and records the time spent
// in each phase.
type timedTransport struct {
	c                        *postgram.Client
	diff, upload, finalize   time.Duration
	uploadCalls, uploadFiles int
}

func (t *timedTransport) Diff(ctx context.Context, r syncproto.DiffRequest) (*syncproto.DiffResponse, error) {
	start := time.Now()
	defer func() { t.diff += time.Since(start) }()
	return t.c.Sync().Diff(ctx, r)
}

func (t *timedTransport) Upload(ctx context.Context, r syncproto.UploadRequest) (*syncproto.UploadResponse, error) {
	start := time.Now()
	defer func() { t.upload += time.Since(start) }()
	t.uploadCalls++
	t.uploadFiles += len(r.Files)
	return t.c.Sync().Upload(ctx, r)
}

func (t *timedTransport) Finalize(ctx context.Context, r syncproto.FinalizeRequest) (*syncproto.FinalizeResponse, error) {
	start := time.Now()
	defer func() { t.finalize += time.Since(start) }()
	return t.c.Sync().Finalize(ctx, r)
}

// syncRun is one measured sync.
type syncRun struct {
	backend, phase string
	sum            *syncproto.Summary
	wall           time.Duration
	tr             *timedTransport
}

func syncBench(ctx context.Context, o syncOptions, stdout, stderr io.Writer) (bool, error) {
	start := time.Now()
	tmp, err := os.MkdirTemp("", "postgram-bench-sync-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "notes")
	logf(stderr, start, "writing %d notes of %d bytes under %s", o.notes, o.size, root)
	total, dirs, err := writeNoteTree(root, o)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(stdout, "postgram-bench sync\n")
	fmt.Fprintf(stdout, "  client    %s %s/%s, GOMAXPROCS=%d, NumCPU=%d\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintf(stdout, "  library   %s\n", buildInfo())
	fmt.Fprintf(stdout, "  tree      %d notes, %s, in %d folders (syncproto.Sync, batches of ≤ %d files / %s)\n",
		o.notes, mib(uint64(total)), dirs, syncproto.MaxBatchFiles, mib(syncproto.MaxBatchBytes))

	var runs []syncRun
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
		rs, err := syncBackend(ctx, b, root, o, stderr, start)
		b.close()
		if err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		runs = append(runs, rs...)
	}

	t := newTable(fmt.Sprintf("Markdown sync of %d notes through the library (times in ms)", o.notes),
		"backend", "run", "files", "uploaded", "batches", "wall", "files/s", "walk+read", "diff", "upload", "finalize")
	for _, r := range runs {
		client := r.wall - r.tr.diff - r.tr.upload - r.tr.finalize
		t.add(r.backend, r.phase, strconv.Itoa(r.sum.Files), strconv.Itoa(r.tr.uploadFiles), strconv.Itoa(r.sum.Batches),
			ms(r.wall), perSec(rate(r.sum.Files, r.wall)), ms(client), ms(r.tr.diff), ms(r.tr.upload), ms(r.tr.finalize))
	}
	if err := t.write(stdout); err != nil {
		return false, err
	}
	met := true
	fmt.Fprintln(stdout)
	for _, r := range runs {
		if r.phase != "no-change" {
			continue
		}
		ok := r.wall <= 2*time.Second
		met = met && ok
		fmt.Fprintf(stdout, "target %s: no-change re-sync of %d notes %s ms (≤ 2000: %s)\n", r.backend, r.sum.Files, ms(r.wall), verdict(ok))
	}
	printFooter(stdout, start)
	return met, nil
}

// syncBackend runs the first sync and the no-change re-sync on b, checking
// the counts.
func syncBackend(ctx context.Context, b *benchBackend, root string, o syncOptions, stderr io.Writer, start time.Time) ([]syncRun, error) {
	c, err := postgram.New(ctx, postgram.Config{Store: b.store})
	if err != nil {
		return nil, err
	}
	var runs []syncRun
	for _, phase := range []string{"first", "no-change"} {
		logf(stderr, start, "%s: %s sync", b.name, phase)
		tr := &timedTransport{c: c}
		t0 := time.Now()
		sum, err := syncproto.Sync(ctx, tr, root, syncproto.Options{Repo: "bench-notes"})
		wall := time.Since(t0)
		if err != nil {
			return nil, fmt.Errorf("%s sync: %w", phase, err)
		}
		want := syncproto.Summary{Repo: "bench-notes", Files: o.notes, Created: o.notes, Batches: (o.notes + syncproto.MaxBatchFiles - 1) / syncproto.MaxBatchFiles}
		if phase == "no-change" {
			want = syncproto.Summary{Repo: "bench-notes", Files: o.notes, Unchanged: o.notes}
		}
		if sum.Created != want.Created || sum.Unchanged != want.Unchanged || sum.Updated != 0 || sum.Deleted != 0 || sum.Restored != 0 || sum.Batches != want.Batches {
			return nil, fmt.Errorf("%s sync did %+v, want %+v", phase, *sum, want)
		}
		runs = append(runs, syncRun{backend: b.name, phase: phase, sum: sum, wall: wall, tr: tr})
		if phase == "first" && b.analyze != nil {
			// What autovacuum would do after a bulk load.
			if err := b.analyze(ctx); err != nil {
				return nil, err
			}
		}
	}
	return runs, nil
}
