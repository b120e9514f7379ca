package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/cmd/pgm/internal/api"
)

// defaultTimeout bounds every HTTP request unless --timeout says otherwise.
const defaultTimeout = 30 * time.Second

// app is one invocation of pgm: its streams, environment, global flags and
// (once a command needs it) its API client.
type app struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	now    func() time.Time

	// global flags
	apiURL   string
	apiKey   string
	timeout  time.Duration
	jsonOut  bool
	toonOut  bool
	fullResp bool

	cfg    *config // resolved on first use
	client *api.Client
}

func newApp(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *app {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	return &app{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, now: time.Now}
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

const rootLong = `pgm is the command-line client of a Postgram server: store, search, recall
and manage typed knowledge (memories, documents, tasks, people, projects,
interactions) over the server's REST API.

Configuration (each setting from the flag, else the environment, else ~/.pgmrc):
  --api-url  PGM_API_URL  api_url  server URL (default ` + defaultAPIURL + `)
  --api-key  PGM_API_KEY  api_key  API key, sent as "Authorization: Bearer <key>"
~/.pgmrc is JSON, e.g. {"api_url": "http://host:3100", "api_key": "pgm-..."};
keep it private (chmod 600): pgm warns when group or others can read it.

Output: readable tables by default. --json prints compact JSON rows for
agents (search rows are {id,type,score,chunk,tags}; use 'pgm recall ID' for
the complete content), --toon prints the same rows as TOON, and
--full-response prints the complete REST response (as JSON, or as TOON with
--toon).

Requests time out after 30s (--timeout); Ctrl-C cancels the request in flight.
Errors are printed as one line on standard error.

`

// rootCmd builds the command tree. Every command lives in its own file and
// registers itself here; they share the app's API client and output helpers.
func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "pgm",
		Short:         "Command-line client for a Postgram knowledge and memory server",
		Long:          rootLong + exitCodeHelp(),
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.apiURL, "api-url", "", "server URL (overrides PGM_API_URL and ~/.pgmrc; default "+defaultAPIURL+")")
	pf.StringVar(&a.apiKey, "api-key", "", "API key (overrides PGM_API_KEY and ~/.pgmrc)")
	pf.DurationVar(&a.timeout, "timeout", defaultTimeout, "HTTP request timeout (0 disables it)")
	pf.BoolVar(&a.jsonOut, "json", false, "print compact JSON rows for agents")
	pf.BoolVar(&a.toonOut, "toon", false, "print compact rows as TOON")
	pf.BoolVar(&a.fullResp, "full-response", false, "print the complete REST response (JSON, or TOON with --toon)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if a.jsonOut && a.toonOut {
			return usageErr("--json and --toon cannot be used together")
		}
		return nil
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%s", err.Error()) })

	root.AddCommand(
		a.storeCmd(),
		a.recallCmd(),
		a.searchCmd(),
		a.listCmd(),
		a.updateCmd(),
		a.deleteCmd(),
		a.queueCmd(),
		a.taskCmd(),   // task.go
		a.memoryCmd(), // memory.go
		a.syncCmd(),   // sync.go
		a.backupCmd(), // backup.go
		a.linkCmd(), a.unlinkCmd(), a.expandCmd(),
		a.ingestCmd(), a.jobsCmd(), a.watchCmd(), // ingest.go
	)
	return root
}

// api returns the API client, resolving the configuration on first use.
func (a *app) api() (*api.Client, error) {
	if a.client != nil {
		return a.client, nil
	}
	if a.timeout < 0 {
		return nil, usageErr("--timeout must not be negative")
	}
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	a.client = &api.Client{
		BaseURL:   cfg.URL,
		APIKey:    cfg.Key,
		HTTP:      &http.Client{Timeout: a.timeout},
		UserAgent: "pgm/" + version(),
	}
	return a.client, nil
}

// command builds a leaf command whose RunE errors are marked as runtime
// errors (anything cobra returns unmarked is a usage error).
func (a *app) command(c *cobra.Command, run func(cmd *cobra.Command, args []string) error) *cobra.Command {
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if err := run(cmd, args); err != nil {
			return &runError{err: err}
		}
		return nil
	}
	return c
}

// runError marks an error returned by a command's own code.
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// usageError is a problem with the command line or the local input; it
// exits with apierror.ExitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// enumCompletion completes a flag from a fixed list.
func enumCompletion[T ~string](vals []T) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = string(v)
	}
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

var memoryRoles = []postgram.MemoryRole{postgram.RoleDurableMemory, postgram.RoleSessionContext}

// registerEnumCompletions adds value completion for the enum flags c has.
func registerEnumCompletions(c *cobra.Command) {
	reg := func(name string, fn func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)) {
		if c.Flags().Lookup(name) != nil {
			_ = c.RegisterFlagCompletionFunc(name, fn)
		}
	}
	reg("type", enumCompletion(postgram.EntityTypes))
	reg("visibility", enumCompletion(postgram.Visibilities))
	reg("status", enumCompletion(postgram.Statuses))
	reg("memory-role", enumCompletion(memoryRoles))
}

// listUsage is the help text naming an enum's values.
func listUsage[T ~string](what string, vals []T) string {
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = string(v)
	}
	return what + ": " + strings.Join(s, ", ")
}
