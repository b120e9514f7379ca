package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/postgram-go/postgram/internal/pgtest"
)

// runBenchOK runs a subcommand and returns its standard output.
func runBenchOK(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), args, &out, &errOut); code != exitOK {
		t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out.String(), errOut.String())
	}
	return out.String()
}

// TestSyncBenchTiny runs postgram-bench sync on 60 notes on both backends
// (the PostgreSQL one in the test's own schema): both runs are verified by
// the command (created, then all unchanged with no batch).
func TestSyncBenchTiny(t *testing.T) {
	t.Parallel()
	out := runBenchOK(t, "sync", "--notes", "60", "--size", "200", "--database-url", pgtest.Schema(t), "--schema", "")
	for _, want := range []string{"Markdown sync of 60 notes", "sqlite    first      60     60        2", "sqlite    no-change  60     0         0",
		"postgres  first      60", "postgres  no-change  60", "target sqlite: no-change re-sync of 60 notes", "target postgres:"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSyncBenchFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--notes", "0"}, {"--backends", "mysql"}, {"--backends", ""}, {"--schema", "Bad-Name"}, {"extra"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), append([]string{"sync"}, args...), &out, &errOut); code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, exitUsage, errOut.String())
		}
	}
}

// TestTasksBenchTiny runs postgram-bench tasks on 90 tasks in 3 contexts
// on both backends; the command checks every listed task's context and
// the totals.
func TestTasksBenchTiny(t *testing.T) {
	t.Parallel()
	out := runBenchOK(t, "tasks", "--tasks", "90", "--contexts", "3", "--queries", "6", "--workers", "2",
		"--backends", "postgres,sqlite", "--database-url", pgtest.Schema(t), "--schema", "")
	for _, want := range []string{"ListTasks over 90 tasks, 6 measured calls", "postgres  context ", "sqlite    context+status",
		"target sqlite: context-filtered list p95", "target postgres:"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, " 30\n") {
		t.Fatalf("a context should match 30 tasks:\n%s", out)
	}
}
