package config

import (
	"log/slog"
	"path/filepath"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/ingest/fetch"
	"github.com/postgram-go/postgram/ingest/raw"
)

// IngestServices returns what builds each workspace's ingestion service:
// one raw-content store under the data directory (or RAW_STORE_URL), in
// which the configured workspace (POSTGRAM_WORKSPACE) keeps the top level
// and every other workspace its own part (raw.Sub), and a fetcher that
// refuses private addresses unless INGEST_ALLOW_PRIVATE. Without either a
// data directory or RAW_STORE_URL ingestion is off: it returns nil (the
// routes answer 503).
func (env *Env) IngestServices(log *slog.Logger) (func(*postgram.Admin) (*ingest.Service, error), error) {
	if env.RawStoreURL == "" && env.DataDir == "" {
		log.Warn("ingestion is off: set POSTGRAM_DATA_DIR or RAW_STORE_URL for the raw-content store")
		return nil, nil
	}
	rs, err := raw.Open(env.RawStoreURL, env.DataDir, env.IngestMaxBytes)
	if err != nil {
		return nil, err
	}
	f := fetch.New(fetch.Config{MaxBytes: env.IngestMaxBytes, AllowPrivate: env.IngestAllowPrivate})
	log.Info("ingestion", "max_bytes", env.IngestMaxBytes, "allow_private", env.IngestAllowPrivate,
		"concurrency", env.IngestConcurrency, "raw_store", redactedStore(env))
	return func(admin *postgram.Admin) (*ingest.Service, error) {
		store := rs
		if admin.Workspace() != env.Workspace {
			sub, err := raw.Sub(rs, admin.Workspace())
			if err != nil {
				return nil, err
			}
			store = sub
		}
		return ingest.New(admin, ingest.Config{Raw: store, Fetcher: f, MaxBytes: env.IngestMaxBytes,
			Concurrency: env.IngestConcurrency, Lease: env.IngestLease, KeepFailed: env.IngestKeepFailed, Logger: log.With("workspace", admin.Workspace())})
	}, nil
}

// IngestService builds the ingestion service of admin's workspace (see
// IngestServices); nil when ingestion is off.
func (env *Env) IngestService(admin *postgram.Admin, log *slog.Logger) (*ingest.Service, error) {
	build, err := env.IngestServices(log)
	if err != nil || build == nil {
		return nil, err
	}
	return build(admin)
}

func redactedStore(env *Env) string {
	if env.RawStoreURL == "" {
		return filepath.Join(env.DataDir, "raw")
	}
	return redactURL(env.RawStoreURL)
}
