// Command postgram-bench measures Postgram against PostgreSQL + pgvector
// and prints the tables the README reports.
//
//	postgram-bench search [flags]   hybrid search latency by profile, with EXPLAIN summaries
//	postgram-bench ingest [flags]   Store and enrichment throughput
//	postgram-bench load [flags]     REST throughput and latency under concurrent clients
//	postgram-bench sqlite [flags]   the embedded SQLite store: open time, memory, search latency
//	postgram-bench graph [flags]    graph expansion and link-neighbors on both backends
//	postgram-bench sync [flags]     Markdown folder sync: first sync and no-change re-sync, both backends
//	postgram-bench tasks [flags]    task lists filtered by GTD context, both backends
//	postgram-bench quality [flags]  search quality on a labelled set, per category, dev and held-out
//	postgram-bench pages [flags]    ingestion of local HTML pages through jobs, and live-event delivery
//
// Both connect to --database-url (default $DATABASE_URL, else the loopback
// test cluster of scripts/pgtest.sh) and work in their own schema through
// search_path, so they never touch the public schema's data. The embedder
// is postgramtest's deterministic stub, with an optional per-call delay to
// stand in for a remote provider.
//
// Exit status: 0 success, 1 error or failed verification, 2 bad usage, 3 a
// latency target was missed (search --assert).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK     = 0
	exitError  = 1
	exitUsage  = 2
	exitTarget = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "search":
		return runSearch(ctx, args[1:], stdout, stderr)
	case "ingest":
		return runIngest(ctx, args[1:], stdout, stderr)
	case "load":
		return runLoad(ctx, args[1:], stdout, stderr)
	case "sqlite":
		return runSQLite(ctx, args[1:], stdout, stderr)
	case "graph":
		return runGraph(ctx, args[1:], stdout, stderr)
	case "sync":
		return runSyncBench(ctx, args[1:], stdout, stderr)
	case "tasks":
		return runTasksBench(ctx, args[1:], stdout, stderr)
	case "quality":
		return runQuality(ctx, args[1:], stdout, stderr)
	case "pages":
		return runPagesBench(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	default:
		fmt.Fprintf(stderr, "postgram-bench: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: postgram-bench <command> [flags]

Commands:
  search   hybrid search latency by profile over a reusable fixture, with EXPLAIN summaries
  ingest   Client.Store throughput and enrichment throughput on a fresh schema
  load     concurrent REST clients (search and store) against the server's handler over loopback
  sqlite   the embedded SQLite store at 10,000 and 50,000 chunks: open time, memory, search latency
  graph    Client.Expand latency and link-neighbors time over a 10,000-entity, 50,000-edge graph, both backends
  sync     Markdown folder sync of 10,000 notes through the library: first sync and no-change re-sync, both backends
  tasks    ListTasks filtered by GTD context over 10,000 tasks in 20 contexts: p50/p95, both backends
  quality  search quality on a labelled set: nDCG@5, MRR@10, recall@10, hit@1 per category, dev and held-out
  pages    ingestion of 1,000 local HTML pages through jobs, with live-event delivery latency, both backends

Run 'postgram-bench <command> -h' for the command's flags.
`)
}

// newFlagSet returns a flag set that reports errors instead of exiting and
// prints a synopsis before the flag defaults.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("postgram-bench "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: postgram-bench %s [flags]\n\n%s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and applies check; it returns -1 to continue, or
// the exit status after printing the problem and the usage.
func parseFlags(fs *flag.FlagSet, args []string, check func() error) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage // the flag package printed the error and the usage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return exitUsage
	}
	if err := check(); err != nil {
		fmt.Fprintf(fs.Output(), "%s: %v\n", fs.Name(), err)
		fs.Usage()
		return exitUsage
	}
	return -1
}
