// Package config turns the environment variables of the commands
// (postgram-server, postgram-mcp, pgm-admin) into library configuration.
// It never reads the environment itself: commands pass a lookup function
// (os.Getenv), so the rule "only cmd/ reads the environment" holds and
// tests pass a map.
package config

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/providers/ollama"
	"github.com/postgram-go/postgram/providers/openai"
	"github.com/postgram-go/postgram/storage/postgres"
)

// Getenv looks up one variable ("" when unset).
type Getenv func(string) string

// Env is the parsed environment. Field comments name the variable and the
// default.
type Env struct {
	DatabaseURL string // DATABASE_URL (required until the embedded store exists)
	Workspace   string // POSTGRAM_WORKSPACE, default "default"
	Bind        string // POSTGRAM_BIND, default 127.0.0.1
	Port        int    // PORT, default 3100
	LogLevel    slog.Level
	// MigrateOnStart runs migrations when the server starts (MIGRATE_ON_START, default true).
	MigrateOnStart  bool
	ShutdownTimeout time.Duration // SHUTDOWN_TIMEOUT_MS, default 20000
	MaxBodyBytes    int64         // POSTGRAM_MAX_BODY_BYTES, default 4 MiB
	KeyPepper       string        // API_KEY_PEPPER

	EmbeddingProvider   string        // EMBEDDING_PROVIDER: openai, ollama, deterministic or none
	EmbeddingModel      string        // EMBEDDING_MODEL
	EmbeddingDimensions int           // EMBEDDING_DIMENSIONS
	EmbeddingBaseURL    string        // EMBEDDING_BASE_URL (falls back to OLLAMA_BASE_URL for ollama)
	EmbeddingAPIKey     string        // EMBEDDING_API_KEY, else OPENAI_API_KEY for openai
	EmbeddingTimeout    time.Duration // EMBEDDING_TIMEOUT_MS, default 15000

	QueryCacheSize      int           // QUERY_EMBEDDING_CACHE_SIZE, default 512
	QueryCacheSecret    string        // QUERY_EMBEDDING_CACHE_SECRET
	QueryCacheRetention time.Duration // QUERY_EMBEDDING_CACHE_RETENTION_DAYS, default 30

	WorkerConcurrency int           // ENRICHMENT_CONCURRENCY, default 2
	PollInterval      time.Duration // ENRICHMENT_POLL_INTERVAL_MS, default 30000 (new work wakes the worker at once)
}

// Parse reads the environment through get. Bad values are errors naming
// the variable.
func Parse(get Getenv) (*Env, error) {
	e := &Env{
		DatabaseURL:       get("DATABASE_URL"),
		Workspace:         or(get("POSTGRAM_WORKSPACE"), postgram.DefaultWorkspace),
		Bind:              or(get("POSTGRAM_BIND"), "127.0.0.1"),
		KeyPepper:         get("API_KEY_PEPPER"),
		EmbeddingModel:    get("EMBEDDING_MODEL"),
		EmbeddingBaseURL:  get("EMBEDDING_BASE_URL"),
		EmbeddingAPIKey:   get("EMBEDDING_API_KEY"),
		QueryCacheSecret:  get("QUERY_EMBEDDING_CACHE_SECRET"),
		EmbeddingProvider: strings.ToLower(strings.TrimSpace(get("EMBEDDING_PROVIDER"))),
	}
	var err error
	ints := []struct {
		name string
		def  int
		min  int
		max  int
		dst  *int
	}{
		{"PORT", 3100, 0, 65535, &e.Port},
		{"EMBEDDING_DIMENSIONS", 0, 0, 16000, &e.EmbeddingDimensions},
		{"QUERY_EMBEDDING_CACHE_SIZE", 512, -1, 1_000_000, &e.QueryCacheSize},
		{"ENRICHMENT_CONCURRENCY", 2, 1, 64, &e.WorkerConcurrency},
	}
	for _, v := range ints {
		if *v.dst, err = intVar(get, v.name, v.def, v.min, v.max); err != nil {
			return nil, err
		}
	}
	ms := []struct {
		name string
		def  int
		dst  *time.Duration
	}{
		{"SHUTDOWN_TIMEOUT_MS", 20000, &e.ShutdownTimeout},
		{"EMBEDDING_TIMEOUT_MS", 15000, &e.EmbeddingTimeout},
		{"ENRICHMENT_POLL_INTERVAL_MS", 30000, &e.PollInterval},
	}
	for _, v := range ms {
		n, err := intVar(get, v.name, v.def, 1, 24*3600*1000)
		if err != nil {
			return nil, err
		}
		*v.dst = time.Duration(n) * time.Millisecond
	}
	days, err := intVar(get, "QUERY_EMBEDDING_CACHE_RETENTION_DAYS", 30, 1, 3650)
	if err != nil {
		return nil, err
	}
	e.QueryCacheRetention = time.Duration(days) * 24 * time.Hour
	bodyKB, err := intVar(get, "POSTGRAM_MAX_BODY_BYTES", 4<<20, 1024, 1<<30)
	if err != nil {
		return nil, err
	}
	e.MaxBodyBytes = int64(bodyKB)
	if e.MigrateOnStart, err = boolVar(get, "MIGRATE_ON_START", true); err != nil {
		return nil, err
	}
	switch lvl := strings.ToLower(or(get("LOG_LEVEL"), "info")); lvl {
	case "debug":
		e.LogLevel = slog.LevelDebug
	case "info":
		e.LogLevel = slog.LevelInfo
	case "warn", "warning":
		e.LogLevel = slog.LevelWarn
	case "error":
		e.LogLevel = slog.LevelError
	default:
		return nil, fmt.Errorf("LOG_LEVEL: %q is not one of debug, info, warn, error", lvl)
	}
	if net.ParseIP(e.Bind) == nil && e.Bind != "localhost" {
		return nil, fmt.Errorf("POSTGRAM_BIND: %q is not an IP address", e.Bind)
	}
	if e.EmbeddingProvider == "" {
		if get("OPENAI_API_KEY") != "" {
			e.EmbeddingProvider = "openai"
		} else {
			e.EmbeddingProvider = "none"
		}
	}
	switch e.EmbeddingProvider {
	case "openai":
		if e.EmbeddingAPIKey == "" {
			e.EmbeddingAPIKey = get("OPENAI_API_KEY")
		}
	case "ollama":
		if e.EmbeddingBaseURL == "" {
			e.EmbeddingBaseURL = get("OLLAMA_BASE_URL")
		}
	case "deterministic", "none":
	default:
		return nil, fmt.Errorf("EMBEDDING_PROVIDER: %q is not one of openai, ollama, deterministic, none", e.EmbeddingProvider)
	}
	return e, nil
}

func or(v, def string) string {
	if strings.TrimSpace(v) == "" {
		return def
	}
	return strings.TrimSpace(v)
}

func intVar(get Getenv, name string, def, min, max int) (int, error) {
	s := strings.TrimSpace(get(name))
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < min || n > max {
		return 0, fmt.Errorf("%s: %q must be an integer between %d and %d", name, s, min, max)
	}
	return n, nil
}

func boolVar(get Getenv, name string, def bool) (bool, error) {
	s := strings.TrimSpace(get(name))
	if s == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%s: %q must be true or false", name, s)
	}
	return b, nil
}

// Logger returns a JSON slog logger at the configured level on w.
func (e *Env) Logger(w *os.File) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: e.LogLevel}))
}

// Addr is the listen address.
func (e *Env) Addr() string { return net.JoinHostPort(e.Bind, strconv.Itoa(e.Port)) }

// Embedder builds the configured embedder; nil for "none".
func (e *Env) Embedder() (postgram.Embedder, error) {
	switch e.EmbeddingProvider {
	case "openai":
		return openai.New(openai.Config{APIKey: e.EmbeddingAPIKey, BaseURL: e.EmbeddingBaseURL, Model: e.EmbeddingModel,
			Dimensions: e.EmbeddingDimensions, Timeout: e.EmbeddingTimeout})
	case "ollama":
		return ollama.New(ollama.Config{BaseURL: e.EmbeddingBaseURL, Model: e.EmbeddingModel, Dimensions: e.EmbeddingDimensions,
			Timeout: e.EmbeddingTimeout, APIKey: e.EmbeddingAPIKey})
	case "deterministic":
		d := e.EmbeddingDimensions
		if d == 0 {
			d = 256
		}
		return postgramtest.NewEmbedder(d), nil
	}
	return nil, nil
}

// OpenStore opens the configured store. Until the embedded default exists
// DATABASE_URL is required.
func (e *Env) OpenStore(ctx context.Context, log *slog.Logger) (postgram.Storage, error) {
	if e.DatabaseURL == "" {
		return nil, fmt.Errorf("DATABASE_URL is not set: point it at PostgreSQL with pgvector (scripts/pgtest.sh start prints a local one)")
	}
	st, err := postgres.Open(ctx, postgres.Config{URL: e.DatabaseURL, Logger: log})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Migrator is implemented by stores with explicit migrations.
type Migrator interface {
	Migrate(ctx context.Context) error
}

// ClientConfig is the library configuration for store and embedder.
func (e *Env) ClientConfig(st postgram.Storage, emb postgram.Embedder, log *slog.Logger) postgram.Config {
	cfg := postgram.Config{
		Store: st, Workspace: e.Workspace, Embedder: emb, Logger: log,
		QueryCache: postgram.QueryCacheConfig{Size: e.QueryCacheSize, Retention: e.QueryCacheRetention},
		Worker:     postgram.WorkerConfig{Concurrency: e.WorkerConcurrency, PollInterval: e.PollInterval},
	}
	if e.QueryCacheSecret != "" {
		cfg.QueryCache.Secret = []byte(e.QueryCacheSecret)
	}
	if e.KeyPepper != "" {
		cfg.KeyPepper = []byte(e.KeyPepper)
	}
	return cfg
}
