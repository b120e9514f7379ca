package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/postgram-go/postgram"
)

// parallel calls fn(ctx, i) for every i in [0, n) from workers goroutines,
// each taking the next index as it finishes the previous one. The first
// error cancels the rest and is returned.
func parallel(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(1, min(workers, n)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// ticker calls fn every d until the returned stop function is called.
func ticker(d time.Duration, fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// waitQueueEmpty polls the client's embedding queue every poll until no
// entity is pending, and returns the final status. A failed entity is an
// error: the benchmark's stub embedder never fails.
func waitQueueEmpty(ctx context.Context, c *postgram.Client, poll time.Duration) (postgram.QueueStatus, error) {
	for {
		qs, err := c.QueueStatus(ctx, 0)
		if err != nil {
			return qs, err
		}
		if qs.Embedding.Failed > 0 {
			return qs, fmt.Errorf("%d entities failed enrichment", qs.Embedding.Failed)
		}
		if qs.Embedding.Pending == 0 {
			return qs, nil
		}
		select {
		case <-ctx.Done():
			return qs, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// checkQueueDone returns an error unless the queue has nothing pending or
// failed.
func checkQueueDone(ctx context.Context, c *postgram.Client) error {
	qs, err := c.QueueStatus(ctx, 1)
	if err != nil {
		return err
	}
	if e := qs.Embedding; e.Pending > 0 || e.Failed > 0 {
		msg := ""
		if len(qs.Failures) > 0 {
			msg = ": " + qs.Failures[0].Error
		}
		return fmt.Errorf("enrichment left %d entities pending and %d failed%s", e.Pending, e.Failed, msg)
	}
	return nil
}

// printFooter prints the Go runtime's heap and the command's elapsed time.
func printFooter(w io.Writer, start time.Time) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fmt.Fprintf(w, "\ngo runtime: HeapAlloc=%s HeapSys=%s NumGC=%d; total elapsed %s\n",
		mib(m.HeapAlloc), mib(m.HeapSys), m.NumGC, time.Since(start).Round(10*time.Millisecond))
}

// buildInfo describes the code under test: the module's VCS revision when
// the binary was stamped (go build).
func buildInfo() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown build"
	}
	rev, modified, at := "", "", ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		case "vcs.time":
			at = s.Value
		}
	}
	if rev == "" {
		return bi.Main.Path + " (no VCS stamp in the binary)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	s := fmt.Sprintf("%s at %s (%s)", bi.Main.Path, rev, at)
	if modified == "true" {
		s += " with uncommitted changes"
	}
	return s
}

// logf prints a progress line to w (stderr), prefixed with the time since start.
func logf(w io.Writer, start time.Time, format string, args ...any) {
	fmt.Fprintf(w, "[%7.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

// operator returns the operator API of a client the bench built with
// postgram.New (always unscoped, so Admin cannot fail).
func operator(c *postgram.Client) *postgram.Admin {
	a, err := c.Admin()
	if err != nil {
		panic("postgram-bench: " + err.Error())
	}
	return a
}
