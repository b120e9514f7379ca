// Command postgram-mcp serves Postgram's MCP tools over stdio for desktop
// agent hosts (Claude Desktop, editors). It has NO authentication: whoever
// starts it has full access to the store, exactly like pgm-admin. Configure
// it with the same environment variables as postgram-server: without
// DATABASE_URL it opens the same embedded SQLite store (POSTGRAM_DATA_DIR,
// default ~/.local/share/postgram/postgram.db). Logs go to stderr; stdout
// carries the protocol.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/cmd/internal/config"
	"github.com/postgram-go/postgram/transport/mcp"
)

var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "postgram-mcp:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	env, err := config.Parse(os.Getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: env.LogLevel}))
	store, err := env.OpenStore(ctx, log)
	if err != nil {
		return err
	}
	defer store.Close()
	if m, ok := store.(config.Migrator); ok && env.MigrateOnStart {
		if err := m.Migrate(ctx); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	emb, err := env.Embedder()
	if err != nil {
		return err
	}
	client, err := postgram.New(ctx, env.ClientConfig(store, emb, log))
	if err != nil {
		return err
	}
	log.Info("postgram-mcp serving on stdio", "store", store.Name(), "workspace", env.Workspace)
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer client.Stop(context.Background())
	admin, err := client.Admin()
	if err != nil {
		return err
	}
	ingestSvc, err := env.IngestService(admin, log)
	if err != nil {
		return err
	}
	if ingestSvc != nil {
		go func() {
			if err := ingestSvc.Run(ctx); err != nil {
				log.Error("ingestion stopped", "err", err)
			}
		}()
	}
	srv := mcp.NewServer(mcp.Config{Client: client, Version: version, Logger: log, Ingest: ingestSvc})
	return mcp.ServeStdio(ctx, srv, os.Stdin, os.Stdout)
}
