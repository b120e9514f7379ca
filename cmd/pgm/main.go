// Command pgm is the command-line client of a Postgram server. It talks to
// the REST API (DESIGN.md §8) and prints readable tables by default,
// compact JSON rows for agents with --json, the same rows as TOON with
// --toon, and the complete REST response with --full-response.
//
// Usage:
//
//	pgm store "decided to use pgvector" --type memory --tags decisions
//	pgm search "database decisions" --limit 5 --json
//	pgm recall <id>
//	pgm list --type memory
//	pgm update <id> --version 1 --content "updated text"
//	pgm delete <id>
//	pgm queue --include-failures
//	pgm completion bash|zsh|fish|powershell
//
// Configuration, each setting taken from the flag, else the environment,
// else ~/.pgmrc (JSON {"api_url": "...", "api_key": "..."}; pgm warns when
// the file is readable by group or others):
//
//	--api-url  PGM_API_URL  api_url  server URL (default http://127.0.0.1:3100)
//	--api-key  PGM_API_KEY  api_key  API key, sent as "Authorization: Bearer <key>"
//
// Requests time out after 30 seconds (--timeout); SIGINT cancels the
// request in flight.
//
// Errors are reported as one line on standard error, and the exit status
// tells their class (the CLI column of transport/apierror's table):
//
//	0    success
//	1    unexpected error or internal server error [INTERNAL]
//	2    usage error or invalid input [VALIDATION, METHOD_NOT_ALLOWED, PAYLOAD_TOO_LARGE]
//	3    server unreachable (connection refused, DNS failure, timeout) or unavailable [UNAVAILABLE]
//	4    unauthorized: missing, unknown or revoked API key (check PGM_API_KEY) [UNAUTHORIZED]
//	5    forbidden: the API key lacks the scope, entity type or visibility [FORBIDDEN]
//	6    not found [NOT_FOUND]
//	7    version conflict: re-read the entity and retry with its current version [CONFLICT]
//	8    rate limited: retry later [RATE_LIMITED]
//	9    the embedding provider failed [EMBEDDING_FAILED]
//	130  interrupted (SIGINT or SIGTERM)
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore the default handling, so a second
		// Ctrl-C ends pgm even if it is blocked outside the context.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run executes pgm with args (without the program name) and returns the
// exit status. getenv reads the environment (os.Getenv in main), so tests
// can pass their own without touching the process's.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	a := newApp(ctx, stdin, stdout, stderr, getenv)
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if cmd, err := root.ExecuteContextC(ctx); err != nil {
		return a.report(cmd, err)
	}
	return 0
}
