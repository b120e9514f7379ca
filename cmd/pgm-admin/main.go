// Command pgm-admin administers a Postgram store directly: PostgreSQL when
// DATABASE_URL is set, else the embedded SQLite store the server uses
// (POSTGRAM_DATA_DIR, default ~/.local/share/postgram/postgram.db): API
// keys, the audit log, statistics, SQL and migrations. It needs no running
// server and no API key: whoever can reach the database is admin.
//
// Every destructive command has --dry-run and needs --yes.
//
// Exit codes: 0 success, 1 failure, 2 usage or validation error, 3 the
// database is unreachable.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/cmd/internal/config"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/transport/apierror"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// app carries what the commands share.
type app struct {
	get    config.Getenv
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	json   bool
	// workspace is --workspace: the workspace the commands act on instead
	// of POSTGRAM_WORKSPACE.
	workspace string

	env    *config.Env
	store  driver.Storage
	client *postgram.Client
	admin  *postgram.Admin
}

// run executes the command line and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, get config.Getenv) int {
	a := &app{get: databaseAlias(get), stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "pgm-admin",
		Short: "Administer a Postgram store directly (the server's store: SQLite by default, or DATABASE_URL)",
		Long: `pgm-admin administers a Postgram store directly: API keys, the audit log,
statistics, SQL and migrations. It needs no running server.

The store is the server's: PostgreSQL when DATABASE_URL is set, otherwise the
embedded SQLite file postgram.db in POSTGRAM_DATA_DIR (default
$XDG_DATA_HOME/postgram, else ~/.local/share/postgram).

Environment: DATABASE_URL (or PGM_DATABASE_URL), POSTGRAM_DATA_DIR, POSTGRAM_WORKSPACE (default
"default"; --workspace overrides it), API_KEY_PEPPER (must match the server's), EMBEDDING_* as for the
server.

Exit codes: 0 success, 1 failure, 2 usage or validation error,
3 database unreachable.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().BoolVar(&a.json, "json", false, "print JSON")
	root.PersistentFlags().StringVar(&a.workspace, "workspace", "", "the workspace to act on (default POSTGRAM_WORKSPACE, else \"default\")")
	root.AddCommand(a.keyCmd(), a.auditCmd(), a.statsCmd(), a.sqlCmd(), a.migrateCmd())
	root.AddCommand(a.exportCmd(), a.importCmd())
	root.AddCommand(a.modelCmd(), a.embeddingsCmd(), a.reembedCmd())             // models.go
	root.AddCommand(a.linkNeighborsCmd(), a.pruneEdgesCmd())                     // graph.go
	root.AddCommand(a.reextractCmd(), a.improveGraphCmd(), a.validateEdgesCmd()) // extract.go
	root.AddCommand(a.memoryCmd())                                               // memory.go
	root.AddCommand(a.backupCmd(), a.restoreCmd())                               // backup.go
	root.AddCommand(a.purgeCmd())                                                // purge.go
	root.AddCommand(a.userCmd())                                                 // users.go
	root.AddCommand(a.workspaceCmd())                                            // workspaces.go
	defer a.close()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "pgm-admin:", err)
	var usage usageError
	switch {
	case errors.As(err, &usage), isCobraUsage(err):
		return apierror.ExitUsage
	case errors.Is(err, postgram.ErrInvalidArgument):
		return apierror.ExitUsage
	case errors.Is(err, postgram.ErrUnavailable):
		return apierror.ExitUnreachable
	}
	return apierror.ExitInternal
}

// databaseAlias makes PGM_DATABASE_URL stand for DATABASE_URL when that
// is unset, as for the reference system's admin and backup commands.
func databaseAlias(get config.Getenv) config.Getenv {
	return func(k string) string {
		v := get(k)
		if k == "DATABASE_URL" && strings.TrimSpace(v) == "" {
			return get("PGM_DATABASE_URL")
		}
		return v
	}
}

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "invalid argument", "flag needs an argument", "required flag"} {
		if len(msg) >= len(p) && contains(msg, p) {
			return true
		}
	}
	return false
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// open connects to the store and builds an admin (principal-free) client.
// Migrations are not run here: `pgm-admin migrate` does that.
func (a *app) open(ctx context.Context) error {
	if a.client != nil {
		return nil
	}
	env, err := config.Parse(a.get)
	if err != nil {
		return usageError{err.Error()}
	}
	a.env = env
	log := env.Logger(os.Stderr)
	st, err := env.OpenStore(ctx, log)
	if err != nil {
		return err
	}
	a.store = st
	cfg := env.ClientConfig(st, nil, log)
	if a.workspace != "" {
		cfg.Workspace = a.workspace
	}
	c, err := postgram.New(ctx, cfg)
	if err != nil {
		return err
	}
	adm, err := c.Admin()
	if err != nil {
		return err
	}
	a.client, a.admin = c, adm
	return nil
}

func (a *app) close() {
	if a.store != nil {
		a.store.Close()
	}
}
