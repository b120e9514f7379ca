package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/postgram-go/postgram/internal/pgtest"
)

// TestPagesBenchTiny ingests 30 pages on both backends and checks that
// every job ended done and the targets are reported as met.
func TestPagesBenchTiny(t *testing.T) {
	t.Parallel()
	out := runBenchOK(t, "pages", "--pages", "30", "--dims", "32", "--database-url", pgtest.Schema(t), "--schema", "")
	for _, want := range []string{"Ingestion of 30 local HTML pages", "sqlite    30     0 ", "postgres  30     0 "} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPagesBenchFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--pages", "0"}, {"--concurrency", "0"}, {"--backends", "mysql"}, {"extra"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), append([]string{"pages"}, args...), &out, &errOut); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
