// Command postgram-server serves Postgram over HTTP: the REST API under
// /api, MCP (Streamable HTTP) at /mcp and /health, with the enrichment
// worker in-process. It binds to 127.0.0.1:3100 by default.
//
// Configuration is by environment variable (see README.md): DATABASE_URL,
// POSTGRAM_DATA_DIR, POSTGRAM_SQLITE_SYNC, PORT, POSTGRAM_BIND, EMBEDDING_*,
// QUERY_EMBEDDING_CACHE_*, LOG_LEVEL, API_KEY_PEPPER, MIGRATE_ON_START,
// SHUTDOWN_TIMEOUT_MS. With no DATABASE_URL it uses the embedded SQLite
// store, postgram.db in POSTGRAM_DATA_DIR (default
// ~/.local/share/postgram), so it runs with nothing installed.
//
// On the first start of an empty store it creates an admin key and prints
// it once on stderr; afterwards create keys with `pgm-admin key create`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/config"
	"github.com/postgram-go/postgram/transport/mcp"
	"github.com/postgram-go/postgram/transport/rest"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "postgram-server:", err)
		os.Exit(1)
	}
}

// run starts the server and blocks until ctx ends, then shuts down
// gracefully. ready, when non-nil, receives the listening address.
func run(ctx context.Context, get config.Getenv, logOut io.Writer, ready chan<- string) error {
	env, err := config.Parse(get)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: env.LogLevel}))
	store, err := env.OpenStore(ctx, log)
	if err != nil {
		return err
	}
	defer store.Close()
	log.Info("serving workspace", "workspace", env.Workspace, "store", store.Name())
	if m, ok := store.(config.Migrator); ok && env.MigrateOnStart {
		if err := m.Migrate(ctx); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		log.Info("migrations applied")
	}
	emb, err := env.Embedder()
	if err != nil {
		return err
	}
	if emb == nil {
		log.Warn("no embedding provider configured: search is keyword-only; set OPENAI_API_KEY or EMBEDDING_PROVIDER=ollama")
	} else {
		m := emb.Model()
		log.Info("embedding provider", "provider", m.Provider, "model", m.Name, "dimensions", m.Dimensions)
	}
	if i := env.Extraction.Info(); i.Model != "" {
		log.Info("extraction provider", "provider", i.Provider, "model", i.Model, "memory_mode", string(env.Extraction.MemoryMode),
			"auto_create", env.Extraction.AutoCreate, "semantic_neighbors", env.Extraction.SemanticNeighbors)
	}
	client, err := postgram.New(ctx, env.ClientConfig(store, emb, log))
	if err != nil {
		return err
	}
	if err := bootstrapKey(ctx, client, logOut, log); err != nil {
		return err
	}

	restSrv := rest.New(rest.Config{Client: client, Logger: log, MaxBodyBytes: env.MaxBodyBytes, Version: version})
	mcpSrv := mcp.NewServer(mcp.Config{Client: client, Version: version, Logger: log})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.HTTPHandler(mcpSrv, client, log))
	mux.Handle("/mcp/", mcp.HTTPHandler(mcpSrv, client, log))
	mux.Handle("/", restSrv)
	handler := rest.RequestID(rest.AccessLog(log)(rest.Recover(log)(mux)))

	ln, err := net.Listen("tcp", env.Addr())
	if err != nil {
		return fmt.Errorf("listen on %s: %w", env.Addr(), err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	workerCtx, stopWorker := context.WithCancel(context.Background())
	defer stopWorker()
	if err := client.Start(workerCtx); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("postgram-server listening", "addr", ln.Addr().String(), "version", version)
	if ready != nil {
		ready <- ln.Addr().String()
	}

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down: draining requests", "timeout", env.ShutdownTimeout.String())
	shutCtx, cancel := context.WithTimeout(context.Background(), env.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		log.Error("shutdown: requests still running were cut", "err", err)
	}
	if err := client.Stop(shutCtx); err != nil {
		log.Error("shutdown: the worker did not stop in time", "err", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// bootstrapKey creates an admin key on the first start of a store that has
// none and prints it once, so a new user is never locked out.
func bootstrapKey(ctx context.Context, c *postgram.Client, out io.Writer, log *slog.Logger) error {
	keys, err := c.ListKeys(ctx)
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		return nil
	}
	token, k, err := c.CreateKey(ctx, postgram.KeySpec{Name: "bootstrap-admin", Scopes: postgram.AllScopes})
	if err != nil {
		return err
	}
	log.Info("created the bootstrap admin key (shown once on stderr)", "key_id", k.ID.String())
	fmt.Fprintf(out, "\n  No API key existed, so one was created. It is shown only this once:\n\n    %s\n\n"+
		"  Use it as PGM_API_KEY (or an Authorization: Bearer header). Create more with\n"+
		"  `pgm-admin key create NAME --scopes read,write`; revoke this one with\n"+
		"  `pgm-admin key revoke %s --yes`.\n\n", token, k.ID)
	return nil
}
