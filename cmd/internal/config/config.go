// Package config turns the environment variables of the commands
// (postgram-server, postgram-mcp, pgm-admin, postgram-bench) into library
// configuration. It lives under cmd/ because only the commands use it: a
// program that embeds Postgram configures the library (postgram.Config,
// the storage and provider packages) itself. It never reads the
// environment: commands pass a lookup function (os.Getenv), so the rule
// "only cmd/ reads the environment" holds and tests pass a map.
package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/providers/hashing"
	"github.com/postgram-go/postgram/providers/ollama"
	"github.com/postgram-go/postgram/providers/openai"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/transport/ratelimit"
)

// Getenv looks up one variable ("" when unset).
type Getenv func(string) string

// Env is the parsed environment. Field comments name the variable and the
// default.
type Env struct {
	// DatabaseURL selects PostgreSQL (DATABASE_URL). Unset: the embedded
	// SQLite store in DataDir.
	DatabaseURL string
	// DatabaseMigrationURL (DATABASE_MIGRATION_URL) connects as the
	// schema's owner when DATABASE_URL connects as a role subject to
	// row-level security (a member of postgram_app): migrations, vector
	// indexes and store-wide maintenance go through it. Empty:
	// DATABASE_URL's role does everything.
	DatabaseMigrationURL string
	// DatabaseReadURLs (DATABASE_READ_URLS, comma-separated) are streaming
	// replicas of DATABASE_URL's database that serve searches and lists
	// once they have replayed the server's writes (postgres.Config.ReadURLs).
	DatabaseReadURLs []string
	// DatabaseVectorIndex (DATABASE_VECTOR_INDEX: hnsw, the default,
	// binary, or none with DATABASE_MEMORY_INDEX) is each embedding model's vector index on PostgreSQL
	// (postgres.Config.VectorIndex); DatabaseRerankCandidates
	// (DATABASE_RERANK_CANDIDATES, default 400) how many chunks a binary
	// index hands to exact ranking, DatabaseEfSearch (DATABASE_EF_SEARCH,
	// default 40) hnsw.ef_search.
	DatabaseVectorIndex      string
	DatabaseRerankCandidates int
	DatabaseEfSearch         int
	// DatabaseMemoryIndex (DATABASE_MEMORY_INDEX, default false) ranks
	// PostgreSQL's vector searches on an in-process copy of each searched
	// workspace's vectors (postgres.Config.MemoryIndex).
	DatabaseMemoryIndex bool
	// DatabaseMemoryIndexHalf (DATABASE_MEMORY_INDEX_HALF, default false)
	// keeps that copy's vectors in half precision
	// (postgres.Config.MemoryIndexHalf).
	DatabaseMemoryIndexHalf bool
	// DatabaseMemoryIndexCandidates (DATABASE_MEMORY_INDEX_CANDIDATES,
	// default 0: exact) is how many sign-code candidates the copy ranks
	// exactly per vector search (postgres.Config.MemoryIndexCandidates).
	DatabaseMemoryIndexCandidates int
	// DataDir holds the embedded store's database file (SQLiteFile) when
	// DATABASE_URL is unset: POSTGRAM_DATA_DIR, else $XDG_DATA_HOME/postgram
	// (an absolute XDG_DATA_HOME only, as the XDG specification says), else
	// $HOME/.local/share/postgram. Empty when none of them is set.
	DataDir string
	// SQLiteDurable makes every commit of the embedded store fsync its
	// write-ahead log (POSTGRAM_SQLITE_SYNC=full, the default), so an
	// acknowledged write survives power loss and operating-system crashes,
	// not only the process being killed. POSTGRAM_SQLITE_SYNC=normal skips
	// the per-commit fsync: faster bulk writes, and a power cut may then
	// lose the last commits (never corrupt the file).
	SQLiteDurable bool

	Workspace string // POSTGRAM_WORKSPACE, default "default"
	Bind      string // POSTGRAM_BIND, default 127.0.0.1
	Port      int    // PORT, default 3100
	// LogLevel is LOG_LEVEL: debug, info (default), warn, error, and the
	// reference server's trace (debug), fatal (error) and silent.
	LogLevel slog.Level
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
	BatchWait         time.Duration // ENRICHMENT_BATCH_WAIT_MS, default 20 (0: claim as soon as woken; postgram.WorkerConfig.BatchWait)

	// Extraction is LLM relation extraction (EXTRACTION_*), off by default.
	Extraction Extraction
	// OAuthEnabled turns on the OAuth 2.1 authorization server for remote
	// MCP clients (OAUTH_ENABLED, default false); PublicBaseURL is the
	// server's public origin (PUBLIC_BASE_URL), required with it: the
	// issuer and the base of the metadata's endpoints.
	OAuthEnabled  bool
	PublicBaseURL string
	// Ingestion (POST /api/ingest, the MCP tool ingest, pgm ingest):
	// IngestMaxBytes bounds an upload or a download (INGEST_MAX_BYTES,
	// default 64 MiB); IngestAllowPrivate lets URLs reach loopback,
	// private and link-local addresses (INGEST_ALLOW_PRIVATE, default
	// false); IngestConcurrency is how many jobs run at once
	// (INGEST_CONCURRENCY, default 2); RawStoreURL keeps the original
	// bytes in an S3-compatible bucket (RAW_STORE_URL, s3://…; default:
	// raw/ in DataDir).
	IngestMaxBytes     int64
	IngestAllowPrivate bool
	IngestConcurrency  int
	RawStoreURL        string
	// IngestLease is how long a server holds a running job before another
	// may take it over, e.g. after the first died (INGEST_LEASE_SECONDS,
	// default 120; each job step renews it).
	IngestLease time.Duration
	// IngestKeepFailed is how long a failed or cancelled job's original
	// bytes are kept for a retry (INGEST_KEEP_FAILED_DAYS, default 30).
	IngestKeepFailed time.Duration

	// TLSCertFile and TLSKeyFile, both set, make the server speak HTTPS
	// with this PEM pair (TLS_CERT_FILE, TLS_KEY_FILE), reloaded when the
	// files change.
	TLSCertFile, TLSKeyFile string
	// DatabaseConnectTimeout is how long the server keeps retrying an
	// unreachable PostgreSQL at start, with backoff
	// (DATABASE_CONNECT_TIMEOUT: a duration such as 60s or 2m, or whole
	// seconds; default 60s; 0 tries once).
	DatabaseConnectTimeout time.Duration
	// BootstrapKeyFile receives the first admin key when the server's
	// stderr is not a terminal (BOOTSTRAP_KEY_FILE, default
	// bootstrap-admin.key in DataDir), written with mode 0600.
	BootstrapKeyFile string
	// Rate limits (requests per minute; 0 is off). On a loopback bind they
	// default to off; on any other address to 1200 per key
	// (RATE_LIMIT_PER_KEY), 3000 per client IP (RATE_LIMIT_PER_IP) and 30
	// failed authentications per IP (RATE_LIMIT_AUTH_FAILURES).
	// RateLimitBurst (RATE_LIMIT_BURST) is the bucket size, default a tenth
	// of the rate (at least 10).
	RateLimitPerKey, RateLimitPerIP, RateLimitAuthFailures float64
	RateLimitBurst                                         int
	// TrustedProxies are reverse proxies whose X-Forwarded-For names the
	// client for per-IP limits (TRUSTED_PROXIES: comma-separated IPs or
	// CIDRs). Default none.
	TrustedProxies []netip.Prefix
	// WriteTimeout bounds the time to send a response once it starts, and
	// each flushed chunk of a streamed one (HTTP_WRITE_TIMEOUT_MS, default
	// 60000).
	WriteTimeout time.Duration
	// MaxResponseBytes bounds an encoded REST or MCP response
	// (POSTGRAM_MAX_RESPONSE_BYTES, default 32 MiB): a larger page is
	// refused with a VALIDATION error telling the client to page.
	MaxResponseBytes int64
}

// Parse reads the environment through get. Bad values are errors naming
// the variable.
func Parse(get Getenv) (*Env, error) {
	e := &Env{
		DatabaseURL:          strings.TrimSpace(get("DATABASE_URL")),
		DatabaseMigrationURL: strings.TrimSpace(get("DATABASE_MIGRATION_URL")),
		DatabaseReadURLs:     splitComma(get("DATABASE_READ_URLS")),
		DatabaseVectorIndex:  strings.ToLower(strings.TrimSpace(or(get("DATABASE_VECTOR_INDEX"), string(postgres.VectorIndexHNSW)))),
		DataDir:              dataDir(get),
		Workspace:            or(get("POSTGRAM_WORKSPACE"), postgram.DefaultWorkspace),
		Bind:                 or(get("POSTGRAM_BIND"), "127.0.0.1"),
		KeyPepper:            get("API_KEY_PEPPER"),
		EmbeddingModel:       get("EMBEDDING_MODEL"),
		EmbeddingBaseURL:     get("EMBEDDING_BASE_URL"),
		EmbeddingAPIKey:      get("EMBEDDING_API_KEY"),
		QueryCacheSecret:     get("QUERY_EMBEDDING_CACHE_SECRET"),
		EmbeddingProvider:    strings.ToLower(strings.TrimSpace(get("EMBEDDING_PROVIDER"))),
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
		{"DATABASE_RERANK_CANDIDATES", 400, 10, 1000, &e.DatabaseRerankCandidates},
		{"DATABASE_EF_SEARCH", 40, 1, 1000, &e.DatabaseEfSearch},
		{"DATABASE_MEMORY_INDEX_CANDIDATES", 0, 0, 10_000_000, &e.DatabaseMemoryIndexCandidates},
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
	wait, err := intVar(get, "ENRICHMENT_BATCH_WAIT_MS", 20, 0, 60000)
	if err != nil {
		return nil, err
	}
	e.BatchWait = time.Duration(wait) * time.Millisecond
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
	if e.DatabaseMemoryIndex, err = boolVar(get, "DATABASE_MEMORY_INDEX", false); err != nil {
		return nil, err
	}
	if e.DatabaseMemoryIndexHalf, err = boolVar(get, "DATABASE_MEMORY_INDEX_HALF", false); err != nil {
		return nil, err
	}
	if e.MigrateOnStart, err = boolVar(get, "MIGRATE_ON_START", true); err != nil {
		return nil, err
	}
	if e.LogLevel, err = logLevel(get("LOG_LEVEL")); err != nil {
		return nil, err
	}
	switch sync := strings.ToLower(strings.TrimSpace(get("POSTGRAM_SQLITE_SYNC"))); sync {
	case "", "full":
		e.SQLiteDurable = true
	case "normal":
		e.SQLiteDurable = false
	default:
		return nil, fmt.Errorf("POSTGRAM_SQLITE_SYNC: %q is not one of full, normal", sync)
	}
	if e.Extraction, err = parseExtraction(get); err != nil {
		return nil, err
	}
	if err := e.parseOps(get); err != nil {
		return nil, err
	}
	if net.ParseIP(e.Bind) == nil && e.Bind != "localhost" {
		return nil, fmt.Errorf("POSTGRAM_BIND: %q is not an IP address", e.Bind)
	}
	if !postgres.VectorIndexKind(e.DatabaseVectorIndex).Valid() {
		return nil, fmt.Errorf("DATABASE_VECTOR_INDEX: %q is not one of %s, %s, %s", e.DatabaseVectorIndex,
			postgres.VectorIndexHNSW, postgres.VectorIndexBinary, postgres.VectorIndexNone)
	}
	if len(e.DatabaseReadURLs) > 0 && e.DatabaseURL == "" {
		return nil, errors.New("DATABASE_READ_URLS: read replicas need DATABASE_URL (PostgreSQL) for the primary")
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

// LevelSilent is the level LOG_LEVEL=silent selects: above every level
// the commands log at, so nothing is logged.
const LevelSilent = slog.Level(100)

// logLevel reads LOG_LEVEL (default info). The reference server's pino
// levels are accepted too, mapped to the nearest slog level: trace is
// debug, fatal is error, silent logs nothing.
func logLevel(v string) (slog.Level, error) {
	switch lvl := strings.ToLower(or(v, "info")); lvl {
	case "trace", "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error", "fatal":
		return slog.LevelError, nil
	case "silent":
		return LevelSilent, nil
	default:
		return 0, fmt.Errorf("LOG_LEVEL: %q is not one of trace, debug, info, warn, error, fatal, silent", lvl)
	}
}

// parseOps reads the transport and operations variables: TLS, the
// database wait, the bootstrap key file, rate limits, write deadlines and
// response bounds.
func (e *Env) parseOps(get Getenv) error {
	e.TLSCertFile = strings.TrimSpace(get("TLS_CERT_FILE"))
	e.TLSKeyFile = strings.TrimSpace(get("TLS_KEY_FILE"))
	if (e.TLSCertFile == "") != (e.TLSKeyFile == "") {
		return fmt.Errorf("TLS_CERT_FILE and TLS_KEY_FILE: set both (HTTPS) or neither (plain HTTP)")
	}
	e.DatabaseConnectTimeout = 60 * time.Second
	if v := strings.TrimSpace(get("DATABASE_CONNECT_TIMEOUT")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			n, nerr := strconv.Atoi(v)
			if nerr != nil {
				return fmt.Errorf("DATABASE_CONNECT_TIMEOUT: %q is not a duration such as 60s or 2m, or whole seconds", v)
			}
			d = time.Duration(n) * time.Second
		}
		if d < 0 || d > 24*time.Hour {
			return fmt.Errorf("DATABASE_CONNECT_TIMEOUT: %q must be between 0 and 24h", v)
		}
		e.DatabaseConnectTimeout = d
	}
	var err error
	if e.OAuthEnabled, err = boolVar(get, "OAUTH_ENABLED", false); err != nil {
		return err
	}
	e.PublicBaseURL = strings.TrimRight(strings.TrimSpace(get("PUBLIC_BASE_URL")), "/")
	if e.OAuthEnabled && e.PublicBaseURL == "" {
		return fmt.Errorf("OAUTH_ENABLED: set PUBLIC_BASE_URL to the server's public origin (https://…) as well")
	}
	maxIngest, err := intVar(get, "INGEST_MAX_BYTES", 64<<20, 1024, 1<<34)
	if err != nil {
		return err
	}
	e.IngestMaxBytes = int64(maxIngest)
	if e.IngestAllowPrivate, err = boolVar(get, "INGEST_ALLOW_PRIVATE", false); err != nil {
		return err
	}
	if e.IngestConcurrency, err = intVar(get, "INGEST_CONCURRENCY", 2, 1, 64); err != nil {
		return err
	}
	e.RawStoreURL = strings.TrimSpace(get("RAW_STORE_URL"))
	leaseSecs, err := intVar(get, "INGEST_LEASE_SECONDS", 120, 1, 3600)
	if err != nil {
		return err
	}
	e.IngestLease = time.Duration(leaseSecs) * time.Second
	keepDays, err := intVar(get, "INGEST_KEEP_FAILED_DAYS", 30, 1, 3650)
	if err != nil {
		return err
	}
	e.IngestKeepFailed = time.Duration(keepDays) * 24 * time.Hour
	e.BootstrapKeyFile = strings.TrimSpace(get("BOOTSTRAP_KEY_FILE"))
	if e.BootstrapKeyFile == "" && e.DataDir != "" {
		e.BootstrapKeyFile = filepath.Join(e.DataDir, "bootstrap-admin.key")
	}
	loop := e.LoopbackBind()
	rates := []struct {
		name   string
		public float64
		dst    *float64
	}{
		{"RATE_LIMIT_PER_KEY", 1200, &e.RateLimitPerKey},
		{"RATE_LIMIT_PER_IP", 3000, &e.RateLimitPerIP},
		{"RATE_LIMIT_AUTH_FAILURES", 30, &e.RateLimitAuthFailures},
	}
	for _, r := range rates {
		v := strings.TrimSpace(get(r.name))
		if v == "" {
			if !loop {
				*r.dst = r.public
			}
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n < 0 || n > 1e7 || n != n {
			return fmt.Errorf("%s: %q must be a number of requests per minute (0 turns the limit off)", r.name, v)
		}
		*r.dst = n
	}
	if e.RateLimitBurst, err = intVar(get, "RATE_LIMIT_BURST", 0, 0, 1_000_000); err != nil {
		return err
	}
	for _, p := range splitComma(get("TRUSTED_PROXIES")) {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			ip, ierr := netip.ParseAddr(p)
			if ierr != nil {
				return fmt.Errorf("TRUSTED_PROXIES: %q is not an IP address or CIDR", p)
			}
			pfx = netip.PrefixFrom(ip, ip.BitLen())
		}
		e.TrustedProxies = append(e.TrustedProxies, pfx.Masked())
	}
	ms, err := intVar(get, "HTTP_WRITE_TIMEOUT_MS", 60000, 1000, 3600*1000)
	if err != nil {
		return err
	}
	e.WriteTimeout = time.Duration(ms) * time.Millisecond
	maxResp, err := intVar(get, "POSTGRAM_MAX_RESPONSE_BYTES", 32<<20, 1<<20, 1<<30)
	if err != nil {
		return err
	}
	e.MaxResponseBytes = int64(maxResp)
	return nil
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// LoopbackBind reports whether the server binds a loopback address only
// (127.0.0.0/8, ::1 or localhost), where rate limits default to off and
// plain HTTP draws no warning.
func (e *Env) LoopbackBind() bool {
	if e.Bind == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(e.Bind)
	return err == nil && ip.Unmap().IsLoopback()
}

// TLS reports whether TLS_CERT_FILE and TLS_KEY_FILE are set.
func (e *Env) TLS() bool { return e.TLSCertFile != "" }

// RateLimit is the rate limiter configuration (see ratelimit.Config).
func (e *Env) RateLimit(log *slog.Logger) ratelimit.Config {
	return ratelimit.Config{PerKey: e.RateLimitPerKey, PerIP: e.RateLimitPerIP, Burst: e.RateLimitBurst,
		AuthFailuresPerIP: e.RateLimitAuthFailures, TrustedProxies: e.TrustedProxies, Logger: log}
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

// Embedder builds the configured embedder; nil for "none", the default
// when neither EMBEDDING_PROVIDER nor OPENAI_API_KEY is set: the product
// then needs no network, search is keyword-only and says
// degraded: vector, and /health reports status "degraded" with the
// embedding state "disabled".
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
		return hashing.New(d), nil
	}
	return nil, nil
}

// SQLiteFile is the embedded store's file name inside DataDir.
const SQLiteFile = "postgram.db"

// dataDir resolves the embedded store's directory from POSTGRAM_DATA_DIR,
// XDG_DATA_HOME and HOME, in that order ("" when none is usable).
func dataDir(get Getenv) string {
	if d := strings.TrimSpace(get("POSTGRAM_DATA_DIR")); d != "" {
		return filepath.Clean(d)
	}
	if x := strings.TrimSpace(get("XDG_DATA_HOME")); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "postgram")
	}
	if h := strings.TrimSpace(get("HOME")); h != "" {
		return filepath.Join(h, ".local", "share", "postgram")
	}
	return ""
}

// SQLitePath is the embedded store's database file, "" when DATABASE_URL
// selects PostgreSQL or no data directory could be resolved.
func (e *Env) SQLitePath() string {
	if e.DatabaseURL != "" || e.DataDir == "" {
		return ""
	}
	return filepath.Join(e.DataDir, SQLiteFile)
}

// StoreDescription names the store the environment selects, for logs and
// messages: the SQLite file, or the PostgreSQL DSN without its password.
func (e *Env) StoreDescription() string {
	if e.DatabaseURL != "" {
		return "postgres " + RedactDSN(e.DatabaseURL)
	}
	if p := e.SQLitePath(); p != "" {
		return "sqlite " + p
	}
	return "sqlite (no data directory)"
}

// OpenStore opens the configured store: PostgreSQL when DATABASE_URL is
// set, otherwise the embedded SQLite store at SQLitePath (its directory is
// created, 0700). It logs which one it opened. Migrations are the caller's
// (see Migrator).
func (e *Env) OpenStore(ctx context.Context, log *slog.Logger) (driver.Storage, error) {
	if e.DatabaseURL != "" {
		st, err := postgres.Open(ctx, postgres.Config{URL: e.DatabaseURL, OwnerURL: e.DatabaseMigrationURL, ReadURLs: e.DatabaseReadURLs, Logger: log,
			VectorIndex: postgres.VectorIndexKind(e.DatabaseVectorIndex), RerankCandidates: e.DatabaseRerankCandidates, EfSearch: e.DatabaseEfSearch,
			MemoryIndex: e.DatabaseMemoryIndex, MemoryIndexHalf: e.DatabaseMemoryIndexHalf,
			MemoryIndexCandidates: e.DatabaseMemoryIndexCandidates})
		if err != nil {
			return nil, err
		}
		log.Info("store opened", "backend", "postgres", "dsn", RedactDSN(e.DatabaseURL))
		return st, nil
	}
	path := e.SQLitePath()
	if path == "" {
		return nil, fmt.Errorf("no store configured: set POSTGRAM_DATA_DIR (or HOME) for the embedded SQLite store, or DATABASE_URL for PostgreSQL")
	}
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path, Logger: log, Durable: e.SQLiteDurable})
	if err != nil {
		return nil, fmt.Errorf("%w (set POSTGRAM_DATA_DIR to use another directory, or DATABASE_URL for PostgreSQL)", err)
	}
	sync := "normal"
	if e.SQLiteDurable {
		sync = "full"
	}
	log.Info("store opened", "backend", "sqlite", "path", st.Path(), "sync", sync)
	return st, nil
}

var dsnPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)`)

// RedactDSN returns a PostgreSQL connection string (URL or key=value form)
// with any password replaced by "xxxxx".
func RedactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	return dsnPassword.ReplaceAllString(dsn, "${1}xxxxx")
}

// OpenStoreWait is OpenStore, except that an unreachable PostgreSQL (an
// error wrapping postgram.ErrUnavailable) is retried with backoff (0.5 s
// doubling to 5 s) until DatabaseConnectTimeout has passed, logging each
// failed attempt, so that a server started together with its database
// waits for it instead of exiting. Other errors (a malformed DATABASE_URL,
// an unusable SQLite file) fail at once.
func (e *Env) OpenStoreWait(ctx context.Context, log *slog.Logger) (driver.Storage, error) {
	if e.DatabaseURL == "" {
		return e.OpenStore(ctx, log)
	}
	deadline := time.Now().Add(e.DatabaseConnectTimeout)
	backoff := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		// Each attempt may take until the deadline, and at least 2 s.
		ad := deadline
		if floor := time.Now().Add(2 * time.Second); ad.Before(floor) {
			ad = floor
		}
		actx, cancel := context.WithDeadline(ctx, ad)
		st, err := e.OpenStore(actx, log)
		cancel()
		if err == nil {
			if attempt > 1 {
				log.Info("database reachable", "attempt", attempt)
			}
			return st, nil
		}
		if !errors.Is(err, postgram.ErrUnavailable) || ctx.Err() != nil {
			return nil, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("%w (gave up after %d attempts in DATABASE_CONNECT_TIMEOUT=%s)", err, attempt, e.DatabaseConnectTimeout)
		}
		wait := min(backoff, left)
		log.Warn("database not reachable; retrying", "attempt", attempt, "retry_in", wait.String(),
			"gives_up_in", left.Round(time.Millisecond).String(), "dsn", RedactDSN(e.DatabaseURL), "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// Migrator is implemented by stores with explicit migrations.
type Migrator interface {
	Migrate(ctx context.Context) error
}

// ClientConfig is the library configuration for store and embedder.
func (e *Env) ClientConfig(st driver.Storage, emb postgram.Embedder, log *slog.Logger) postgram.Config {
	cfg := postgram.Config{
		Store: st, Workspace: e.Workspace, Embedder: emb, Logger: log,
		QueryCache: postgram.QueryCacheConfig{Size: e.QueryCacheSize, Retention: e.QueryCacheRetention},
		Worker:     postgram.WorkerConfig{Concurrency: e.WorkerConcurrency, PollInterval: e.PollInterval, BatchWait: batchWait(e.BatchWait)},
		Extraction: e.Extraction.Library(),
	}
	if e.QueryCacheSecret != "" {
		cfg.QueryCache.Secret = []byte(e.QueryCacheSecret)
	}
	if e.KeyPepper != "" {
		cfg.KeyPepper = []byte(e.KeyPepper)
	}
	return cfg
}

// batchWait is ENRICHMENT_BATCH_WAIT_MS as postgram.WorkerConfig reads it:
// there 0 means the default and a negative wait none.
func batchWait(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
