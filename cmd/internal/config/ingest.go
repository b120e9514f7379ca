package config

import (
	"log/slog"
	"path/filepath"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/ingest/fetch"
	"github.com/postgram-go/postgram/ingest/raw"
)

// IngestService builds the ingestion service: the raw-content store under
// the data directory (or RAW_STORE_URL) and a fetcher that refuses private
// addresses unless INGEST_ALLOW_PRIVATE. Without either a data directory or
// RAW_STORE_URL ingestion is off (its routes answer 503).
func (env *Env) IngestService(admin *postgram.Admin, log *slog.Logger) (*ingest.Service, error) {
	if env.RawStoreURL == "" && env.DataDir == "" {
		log.Warn("ingestion is off: set POSTGRAM_DATA_DIR or RAW_STORE_URL for the raw-content store")
		return nil, nil
	}
	rs, err := raw.Open(env.RawStoreURL, env.DataDir, env.IngestMaxBytes)
	if err != nil {
		return nil, err
	}
	f := fetch.New(fetch.Config{MaxBytes: env.IngestMaxBytes, AllowPrivate: env.IngestAllowPrivate})
	svc, err := ingest.New(admin, ingest.Config{Raw: rs, Fetcher: f, MaxBytes: env.IngestMaxBytes,
		Concurrency: env.IngestConcurrency, Lease: env.IngestLease, Logger: log})
	if err != nil {
		return nil, err
	}
	log.Info("ingestion", "max_bytes", env.IngestMaxBytes, "allow_private", env.IngestAllowPrivate,
		"concurrency", env.IngestConcurrency, "raw_store", redactedStore(env))
	return svc, nil
}

func redactedStore(env *Env) string {
	if env.RawStoreURL == "" {
		return filepath.Join(env.DataDir, "raw")
	}
	return redactURL(env.RawStoreURL)
}
