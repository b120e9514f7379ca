package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/feed"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/ingest/fetch"
	"github.com/postgram-go/postgram/ingest/raw"
	"github.com/postgram-go/postgram/postgramtest"
)

// pagesOptions are the pages subcommand's flags.
type pagesOptions struct {
	backendFlags
	pages       int
	concurrency int
	dims        int
	seed        uint64
	assert      bool
}

func parsePagesFlags(args []string, stderr io.Writer) (pagesOptions, int) {
	var o pagesOptions
	var list string
	fs := newFlagSet("pages", `Measures ingestion: a local web server serves --pages generated HTML pages
(an article of about 600 words between navigation, a sidebar and a footer);
each is ingested through package ingest's jobs (fetch, main-content
extraction to Markdown, chunking, the deterministic zero-latency embedder,
done), --concurrency jobs at a time, while a live-event subscriber (package
feed) records how long each event took from its commit to the subscriber.
Targets (issue 18): all pages done within 60 s; event delivery p95 at most
100 ms.`, stderr)
	o.backendFlags.register(fs, "postgram_bench_pages", &list)
	fs.IntVar(&o.pages, "pages", 1000, "pages to ingest")
	fs.IntVar(&o.concurrency, "concurrency", 4, "jobs run at once (INGEST_CONCURRENCY)")
	fs.IntVar(&o.dims, "dims", 384, "embedding dimensions")
	fs.Uint64Var(&o.seed, "seed", defaultSeed, "seed of the generated pages")
	fs.BoolVar(&o.assert, "assert", false, "exit 3 when a target is missed")
	code := parseFlags(fs, args, func() error {
		switch {
		case o.pages < 1:
			return errors.New("--pages must be positive")
		case o.concurrency < 1 || o.concurrency > 64:
			return errors.New("--concurrency must be between 1 and 64")
		case o.dims < 1:
			return errors.New("--dims must be positive")
		}
		return o.backendFlags.check(list)
	})
	return o, code
}

func runPagesBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code := parsePagesFlags(args, stderr)
	if code >= 0 {
		return code
	}
	met, err := pagesBench(ctx, o, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "postgram-bench pages: %v\n", err)
		return exitError
	}
	if o.assert && !met {
		return exitTarget
	}
	return exitOK
}

// page is generated page i: an article with boilerplate around it.
func page(vocab *Vocabulary, seed uint64, i int) string {
	title := fmt.Sprintf("Field report %d: %s", i, ContentOfSize(vocab, seed^0x7469746c65, i, 40))
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>" + title + "</title><meta name=\"author\" content=\"Bench Writer\"></head><body>")
	b.WriteString(`<nav><a href="/">Home</a> <a href="/archive">Archive</a> <a href="/about">About</a> Subscribe to the newsletter</nav>`)
	b.WriteString(`<aside><h3>Popular</h3><ul><li><a href="/1">One</a></li><li><a href="/2">Two</a></li></ul></aside>`)
	b.WriteString("<article><h1>" + title + "</h1>")
	for s := range 3 {
		fmt.Fprintf(&b, "<h2>Section %d</h2>", s+1)
		for p := range 2 {
			b.WriteString("<p>" + ContentOfSize(vocab, seed, i*10+s*2+p, 650) + "</p>")
		}
	}
	b.WriteString(`</article><footer>Copyright 2026 Example. All rights reserved. Privacy. Terms.</footer></body></html>`)
	return b.String()
}

type pagesResult struct {
	backend           string
	pages, failed     int
	dup               int
	wall              time.Duration
	jobs              summary
	events            summary // every event: its age when the subscriber got it
	probes            summary // probe writes: from the write's return (its commit) to the subscriber
	lostProbes        int     // probe writes whose event had not arrived 5 s after the run
	eventsSeen, bytes int
}

func pagesBench(ctx context.Context, o pagesOptions, stdout, stderr io.Writer) (bool, error) {
	start := time.Now()
	tmp, err := os.MkdirTemp("", "postgram-bench-pages-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	vocab := NewVocabulary(o.seed)
	pages := make([]string, o.pages)
	total := 0
	for i := range pages {
		pages[i] = page(vocab, o.seed, i)
		total += len(pages[i])
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return false, err
	}
	site := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil || n < 0 || n >= len(pages) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, pages[n])
	})}
	go site.Serve(ln)
	defer site.Close()
	base := "http://" + ln.Addr().String()

	fmt.Fprintf(stdout, "postgram-bench pages\n")
	fmt.Fprintf(stdout, "  client    %s %s/%s, GOMAXPROCS=%d, NumCPU=%d\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintf(stdout, "  library   %s\n", buildInfo())
	fmt.Fprintf(stdout, "  fixture   %d HTML pages, %.1f KiB each on average, served on loopback; %d jobs at once; embedder deterministic, %d dims, no delay\n",
		o.pages, float64(total)/float64(o.pages)/1024, o.concurrency, o.dims)
	var results []pagesResult
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
		r, err := pagesBackend(ctx, b, o, base, dir, stderr, start)
		b.close()
		if err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		results = append(results, r)
	}
	t := newTable(fmt.Sprintf("Ingestion of %d local HTML pages (times in ms unless noted)", o.pages),
		"backend", "pages", "failed", "wall s", "pages/s", "job p50", "job p95", "events", "age p50", "age p95",
		"probes", "late", "delivery p50", "delivery p95", "delivery max", "target")
	met := true
	for _, r := range results {
		ok := r.failed == 0 && r.wall <= 60*time.Second && r.probes.N > 0 && r.lostProbes == 0 && r.probes.P95 <= 100*time.Millisecond
		met = met && ok
		t.add(r.backend, strconv.Itoa(r.pages), strconv.Itoa(r.failed), fmt.Sprintf("%.1f", r.wall.Seconds()),
			perSec(rate(r.pages, r.wall)), ms(r.jobs.P50), ms(r.jobs.P95), strconv.Itoa(r.eventsSeen),
			ms(r.events.P50), ms(r.events.P95), strconv.Itoa(r.probes.N), strconv.Itoa(r.lostProbes), ms(r.probes.P50), ms(r.probes.P95), ms(r.probes.Max), verdict(ok))
	}
	if err := t.write(stdout); err != nil {
		return false, err
	}
	fmt.Fprintln(stdout, "\njob: from submission to done (queued, fetched, extracted, stored, embedded).")
	fmt.Fprintln(stdout, "age: how old each event (all kinds) was when the subscriber got it, from the moment the store wrote it inside its transaction.")
	fmt.Fprintln(stdout, "delivery: a probe entity stored every 50 ms during the run, from Store's return (the commit) to the subscriber's entity.created;")
	fmt.Fprintln(stdout, "late: probes whose event had not reached the subscriber 5 s after the run (left out of the delivery columns).")
	fmt.Fprintln(stdout, "target: every page done within 60 s and delivery p95 <= 100 ms.")
	printFooter(stdout, start)
	return met, nil
}

func pagesBackend(ctx context.Context, b *benchBackend, o pagesOptions, base, dir string, stderr io.Writer, start time.Time) (pagesResult, error) {
	res := pagesResult{backend: b.name, pages: o.pages}
	c, err := postgram.New(ctx, postgram.Config{Store: b.store, Embedder: postgramtest.NewEmbedder(o.dims)})
	if err != nil {
		return res, err
	}
	admin := operator(c)
	rs, err := raw.Open("", dir, 16<<20)
	if err != nil {
		return res, err
	}
	svc, err := ingest.New(admin, ingest.Config{Raw: rs, Fetcher: fetch.New(fetch.Config{AllowPrivate: true}),
		Concurrency: o.concurrency, Poll: 200 * time.Millisecond})
	if err != nil {
		return res, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if err := c.Start(runCtx); err != nil {
		return res, err
	}
	defer c.Stop(context.Background())
	hub := feed.New(admin, feed.Config{Poll: 100 * time.Millisecond})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = hub.Run(runCtx) }()
	go func() { defer wg.Done(); _ = svc.Run(runCtx) }()
	defer wg.Wait()
	defer stop()

	// The subscriber: every event's delay from its commit.
	from, err := hub.Last(ctx)
	if err != nil {
		return res, err
	}
	sub := hub.Subscribe(c, from)
	var delays []time.Duration
	var mu sync.Mutex
	committed := map[string]time.Time{} // probe entity id -> Store's return
	received := map[string]time.Time{}  // entity id -> when entity.created reached the subscriber
	subDone := make(chan struct{})
	go func() {
		defer close(subDone)
		for {
			ev, err := sub.Next(runCtx)
			if err != nil {
				return
			}
			now := time.Now()
			mu.Lock()
			delays = append(delays, now.Sub(ev.At))
			if ev.Kind == "entity.created" {
				received[ev.EntityID] = now
			}
			mu.Unlock()
		}
	}()
	// The probes: a small write every 50 ms while the pages are ingested.
	probeCtx, stopProbes := context.WithCancel(runCtx)
	defer stopProbes()
	probesDone := make(chan struct{})
	go func() {
		defer close(probesDone)
		for i := 0; probeCtx.Err() == nil; i++ {
			e, err := c.Store(probeCtx, postgram.StoreInput{Type: postgram.TypeMemory, Content: fmt.Sprintf("delivery probe %d", i), Tags: []string{"probe"}})
			if err == nil {
				mu.Lock()
				committed[e.ID.String()] = time.Now()
				mu.Unlock()
			}
			select {
			case <-probeCtx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	logf(stderr, start, "%s: submitting %d pages", b.name, o.pages)
	t0 := time.Now()
	ids := make([]uuid.UUID, o.pages)
	for i := range o.pages {
		j, err := svc.Submit(ctx, c, ingest.Input{URL: fmt.Sprintf("%s/p/%d", base, i), Tags: []string{"bench"}})
		if err != nil {
			return res, fmt.Errorf("submit page %d: %w", i, err)
		}
		ids[i] = uuid.MustParse(j.ID)
	}
	var jobLat []time.Duration
	for _, id := range ids {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		j, err := svc.Wait(wctx, c, id)
		cancel()
		if err != nil {
			return res, fmt.Errorf("wait for job %s: %w", id, err)
		}
		if j.Status != driver.JobDone {
			res.failed++
			logf(stderr, start, "%s: job %s %s: %s", b.name, j.ID, j.Status, j.Error)
			continue
		}
		if j.Duplicate {
			res.dup++
		}
		if j.FinishedAt != nil {
			jobLat = append(jobLat, j.FinishedAt.Sub(j.CreatedAt))
		}
	}
	res.wall = time.Since(t0)
	res.jobs = summarize(jobLat)
	stopProbes()
	<-probesDone
	time.Sleep(5 * time.Second) // the last events reach the subscriber
	stop()
	<-subDone
	mu.Lock()
	var probeDelays []time.Duration
	lost := 0
	for id, at := range committed {
		got, ok := received[id]
		if !ok {
			lost++
			continue
		}
		probeDelays = append(probeDelays, max(got.Sub(at), 0)) // an event may arrive before Store returns
	}
	res.events, res.eventsSeen, res.probes = summarize(delays), len(delays), summarize(probeDelays)
	mu.Unlock()
	res.lostProbes = lost
	logf(stderr, start, "%s: %d pages in %.1f s, %d events", b.name, o.pages, res.wall.Seconds(), res.eventsSeen)
	return res, nil
}
