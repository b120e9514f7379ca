// Command postgram-server serves Postgram over HTTP: the REST API under
// /api, MCP (Streamable HTTP) at /mcp and /health, with the enrichment
// worker in-process. It binds to 127.0.0.1:3100 by default.
//
// Configuration is by environment variable (see README.md): DATABASE_URL,
// DATABASE_CONNECT_TIMEOUT, POSTGRAM_DATA_DIR, POSTGRAM_SQLITE_SYNC, PORT,
// POSTGRAM_BIND, TLS_CERT_FILE, TLS_KEY_FILE, RATE_LIMIT_*, TRUSTED_PROXIES,
// EMBEDDING_*, QUERY_EMBEDDING_CACHE_*, LOG_LEVEL, API_KEY_PEPPER,
// MIGRATE_ON_START, SHUTDOWN_TIMEOUT_MS, HTTP_WRITE_TIMEOUT_MS,
// POSTGRAM_MAX_RESPONSE_BYTES, BOOTSTRAP_KEY_FILE, BACKUP_INTERVAL,
// BACKUP_DIR, BACKUP_KEEP, BACKUP_RECIPIENTS, PGM_BACKUP_PASSPHRASE. With no DATABASE_URL it
// uses the embedded SQLite store, postgram.db in POSTGRAM_DATA_DIR (default
// ~/.local/share/postgram), so it runs with nothing installed. With
// DATABASE_URL it waits up to DATABASE_CONNECT_TIMEOUT for PostgreSQL.
//
// With TLS_CERT_FILE and TLS_KEY_FILE it serves HTTPS and picks up renewed
// certificate files without a restart. Plain HTTP on an address other than
// loopback logs a loud warning and /health reports it.
//
// On the first start of an empty store it creates an admin key and shows
// it once: on the terminal when stderr is one, else in a file readable
// only by the server's user (BOOTSTRAP_KEY_FILE, default
// bootstrap-admin.key in the data directory), never in the log stream;
// afterwards create keys with `pgm-admin key create`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/cmd/internal/config"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/internal/certreload"
	"github.com/postgram-go/postgram/oauth"
	"github.com/postgram-go/postgram/transport/mcp"
	"github.com/postgram-go/postgram/transport/ratelimit"
	"github.com/postgram-go/postgram/transport/rest"
	"github.com/postgram-go/postgram/web"
	"github.com/postgram-go/postgram/workspaces"
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
	var certs *certreload.Reloader
	if env.TLS() {
		if certs, err = certreload.New(env.TLSCertFile, env.TLSKeyFile, 0, log); err != nil {
			return err
		}
	}
	store, err := env.OpenStoreWait(ctx, log)
	if err != nil {
		return err
	}
	defer store.Close()
	log.Info("opened the store", "default_workspace", env.Workspace, "store", store.Name())
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
	ingestFor, err := env.IngestServices(log)
	if err != nil {
		return err
	}
	// One server serves every workspace of the store: a request's API key
	// names its workspace. POSTGRAM_WORKSPACE is the default one (the
	// bootstrap key's, /health's, the web app's and OAuth's).
	dir, err := workspaces.Open(ctx, workspaces.Config{Client: env.ClientConfig(store, emb, log), Ingest: ingestFor})
	if err != nil {
		return err
	}
	admin := dir.Default().Admin
	client := admin.Client()
	if err := bootstrapKey(ctx, admin, env.BootstrapKeyFile, logOut, log); err != nil {
		return err
	}

	var warnings []string
	if !env.TLS() && !env.LoopbackBind() {
		w := fmt.Sprintf("plain HTTP on the non-loopback address %s: API keys and content cross the network unencrypted; "+
			"set TLS_CERT_FILE and TLS_KEY_FILE, or bind 127.0.0.1 behind a TLS reverse proxy (README, Security)", env.Bind)
		log.Error("INSECURE: " + w)
		warnings = append(warnings, w)
	}
	// PostgreSQL's default settings make the store slow: say how to fix
	// them (logged only: /health is open and would tell sizes).
	if a, ok := store.(interface {
		SettingsAdvice(context.Context) ([]string, error)
	}); ok {
		advice, err := a.SettingsAdvice(ctx)
		if err != nil {
			log.Warn("could not check the database's settings", "err", err)
		}
		for _, w := range advice {
			log.Warn("slow database settings: " + w)
		}
	}
	limits := env.RateLimit(log)
	if !limits.Enabled() && !env.LoopbackBind() {
		w := "rate limits are off on a non-loopback address (RATE_LIMIT_PER_KEY, RATE_LIMIT_PER_IP and RATE_LIMIT_AUTH_FAILURES are 0)"
		log.Warn(w)
		warnings = append(warnings, w)
	}
	sched, err := backupScheduler(get, env, store, admin, log)
	if err != nil {
		return err
	}
	restCfg := rest.Config{Client: client, Logger: log, MaxBodyBytes: env.MaxBodyBytes, Version: version,
		Warnings: warnings, MaxResponseBytes: env.MaxResponseBytes, Workspaces: dir}
	if sched != nil {
		restCfg.BackupStatus, restCfg.BackupList = sched.Status, sched.List
	}
	restSrv := rest.New(restCfg)
	mcpCfg := mcp.Config{Version: version, Logger: log, MaxResultBytes: env.MaxResponseBytes}
	if ingestFor != nil {
		mcpCfg.IngestFor = func(ctx context.Context, c *postgram.Client) (*ingest.Service, error) {
			w, err := dir.Get(ctx, c.Workspace())
			if err != nil {
				return nil, err
			}
			return w.Ingest, nil
		}
	}
	mcpSrv := mcp.NewServer(mcpCfg)
	mux := http.NewServeMux()
	var mcpOpts []mcp.HTTPOption
	var oauthSrv *oauth.Server
	if env.OAuthEnabled {
		if oauthSrv, err = oauth.New(oauth.Config{Store: store, Admin: admin, Issuer: env.PublicBaseURL, Logger: log}); err != nil {
			return err
		}
		mcpOpts = append(mcpOpts, mcp.WithResourceMetadata(oauthSrv.ResourceMetadataURL()))
		for _, p := range oauth.Paths() {
			mux.Handle(p, oauthSrv.Handler())
		}
		go sweepOAuth(ctx, oauthSrv, log)
		log.Info("oauth enabled", "issuer", oauthSrv.Issuer(), "resource", oauthSrv.Resource())
	}
	mux.Handle("/mcp", mcp.HTTPHandler(mcpSrv, dir, log, mcpOpts...))
	mux.Handle("/mcp/", mcp.HTTPHandler(mcpSrv, dir, log, mcpOpts...))
	mux.Handle("/", restSrv)
	webCfg := web.Config{Logger: log, Version: version, Users: store, Admin: admin, OAuth: oauthSrv}
	for _, st := range env.Settings() {
		webCfg.Settings = append(webCfg.Settings, web.Setting{Name: st.Name, Value: st.Value})
	}
	if sched != nil {
		webCfg.Backups = func(context.Context) ([]web.BackupFile, error) {
			files, err := sched.List()
			out := make([]web.BackupFile, len(files))
			for i, f := range files {
				out[i] = web.BackupFile{File: f.File, Bytes: f.Bytes, CreatedAt: f.CreatedAt}
			}
			return out, err
		}
	}
	webH, err := web.New(webCfg)
	if err != nil {
		return err
	}
	for _, p := range web.Paths() {
		mux.Handle(p, webH)
	}
	var inner http.Handler = mux
	if limits.Enabled() {
		inner = ratelimit.New(limits).Middleware(mux)
		log.Info("rate limits", "per_key_per_min", limits.PerKey, "per_ip_per_min", limits.PerIP,
			"auth_failures_per_ip_per_min", limits.AuthFailuresPerIP, "burst", limits.Burst, "trusted_proxies", len(limits.TrustedProxies))
	}
	handler := rest.RequestID(rest.AccessLog(log)(rest.Recover(log)(rest.WriteDeadline(env.WriteTimeout)(inner))))

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
	// Event streams never end by themselves: end them when shutting down.
	srv.RegisterOnShutdown(restSrv.CloseStreams)
	if certs != nil {
		srv.TLSConfig = certs.TLSConfig()
	}

	workerCtx, stopWorker := context.WithCancel(context.Background())
	defer stopWorker()
	// Every workspace's worker, event hub and ingestion.
	if err := dir.Start(workerCtx); err != nil {
		return err
	}
	log.Info("serving workspaces", "workspaces", dir.Names())
	// With DATABASE_MEMORY_INDEX each workspace's index loads now, in the
	// background, rather than on its first search (which PostgreSQL
	// answers until the load is done: slowly at a million chunks, and
	// exactly in SQL with DATABASE_VECTOR_INDEX=none).
	if w, ok := store.(interface {
		WarmMemoryIndex(context.Context, string) error
	}); ok && env.DatabaseMemoryIndex {
		names := dir.Names()
		go func() {
			for _, ws := range names {
				if err := w.WarmMemoryIndex(workerCtx, ws); err != nil && workerCtx.Err() == nil {
					log.Warn("could not load the in-memory index at start; searches use PostgreSQL until a later load succeeds", "workspace", ws, "err", err)
				}
			}
		}()
	}
	if sched != nil {
		log.Info("scheduled backups", "interval", sched.Interval.String(), "dir", sched.Dir, "keep", sched.Keep,
			"encrypted", len(sched.Recipients) > 0)
		go func() {
			if err := sched.Run(workerCtx); err != nil {
				log.Error("scheduled backups stopped", "err", err)
			}
		}()
	}
	errc := make(chan error, 1)
	go func() {
		if certs != nil {
			errc <- srv.ServeTLS(ln, "", "") // the certificate comes from TLSConfig.GetCertificate
			return
		}
		errc <- srv.Serve(ln)
	}()
	log.Info("postgram-server listening", "addr", ln.Addr().String(), "tls", certs != nil, "version", version)
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
	// Ingestion requeues its running jobs; the workers finish their batch.
	if err := dir.Stop(shutCtx); err != nil {
		log.Error("shutdown: a worker did not stop in time", "err", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// bootstrapKey creates an admin key on the first start of a store that has
// none and shows it once, so a new user is never locked out: on the
// terminal when out is one, otherwise in file (mode 0600, replacing any
// older file), never in the log stream, which log collectors keep.
func bootstrapKey(ctx context.Context, c *postgram.Admin, file string, out io.Writer, log *slog.Logger) error {
	keys, err := c.ListKeys(ctx)
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		return nil
	}
	tty := isTerminal(out)
	if !tty && file == "" {
		return fmt.Errorf("the store has no API key and stderr is not a terminal: set BOOTSTRAP_KEY_FILE (or POSTGRAM_DATA_DIR) " +
			"so that the first admin key can be written there, or create one with `pgm-admin key create NAME --scopes all`")
	}
	token, k, err := c.CreateKey(ctx, postgram.KeySpec{Name: "bootstrap-admin", Scopes: postgram.AllScopes})
	if err != nil {
		return err
	}
	if tty {
		log.Info("created the bootstrap admin key (shown once on the terminal)", "key_id", k.ID.String())
		fmt.Fprintf(out, "\n  No API key existed, so one was created. It is shown only this once:\n\n    %s\n\n"+
			"  Use it as PGM_API_KEY (or an Authorization: Bearer header). Create more with\n"+
			"  `pgm-admin key create NAME --scopes read,write`; revoke this one with\n"+
			"  `pgm-admin key revoke %s --yes`.\n\n", token, k.ID)
		return nil
	}
	if err := writeSecretFile(file, token+"\n"); err != nil {
		// Nobody can ever see this key: do not leave it usable.
		if rerr := c.RevokeKey(ctx, k.ID); rerr != nil {
			log.Error("revoking the undeliverable bootstrap key failed", "key_id", k.ID.String(), "err", rerr)
		}
		return fmt.Errorf("write the bootstrap admin key to BOOTSTRAP_KEY_FILE %s: %w", file, err)
	}
	log.Warn("created the bootstrap admin key: it is in a file readable only by this user; read it, store it elsewhere, then delete the file",
		"file", file, "key_id", k.ID.String())
	return nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// writeSecretFile writes data to path with mode 0600 (its directory 0700
// when created). An existing file is removed first and the new one created
// exclusively, so a planted symlink cannot redirect the secret.
func writeSecretFile(path, data string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sweepOAuth removes expired OAuth codes and refresh tokens every hour.
func sweepOAuth(ctx context.Context, s *oauth.Server, log *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := s.Sweep(ctx); err != nil {
				log.Warn("oauth: sweep expired records", "err", err)
			} else if n > 0 {
				log.Info("oauth: swept expired records", "removed", n)
			}
		}
	}
}
