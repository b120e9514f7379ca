package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Setting is one configuration value as an operator may see it.
type Setting struct{ Name, Value string }

// secret shows whether a secret is set, never its value.
func secret(v string) string {
	if v == "" {
		return "(not set)"
	}
	return "(set, hidden)"
}

// redactURL hides a URL's password (and any query parameter that may carry
// one).
func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(set, unparsable: hidden)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "hidden")
	}
	q := u.Query()
	for _, k := range []string{"password", "sslpassword", "apiKey", "api_key", "token"} {
		if q.Has(k) {
			q.Set(k, "hidden")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Settings lists the server's effective configuration for the admin
// console: secrets are shown as set or not set, URLs without their
// passwords.
func (e *Env) Settings() []Setting {
	store := "embedded SQLite in " + e.DataDir
	if e.DatabaseURL != "" {
		store = "PostgreSQL"
	}
	return []Setting{
		{"store", store},
		{"DATABASE_URL", redactURL(e.DatabaseURL)},
		{"DATABASE_MIGRATION_URL", redactURL(e.DatabaseMigrationURL)},
		{"DATABASE_READ_URLS", redactURLs(e.DatabaseReadURLs)},
		{"DATABASE_VECTOR_INDEX", e.DatabaseVectorIndex},
		{"DATABASE_MEMORY_INDEX", strconv.FormatBool(e.DatabaseMemoryIndex)},
		{"DATABASE_MEMORY_INDEX_HALF", strconv.FormatBool(e.DatabaseMemoryIndexHalf)},
		{"DATABASE_MEMORY_INDEX_CANDIDATES", strconv.Itoa(e.DatabaseMemoryIndexCandidates)},
		{"POSTGRAM_WORKSPACE", e.Workspace},
		{"listen", e.Addr()},
		{"TLS", strconv.FormatBool(e.TLS())},
		{"OAUTH_ENABLED", strconv.FormatBool(e.OAuthEnabled)},
		{"PUBLIC_BASE_URL", e.PublicBaseURL},
		{"INGEST_MAX_BYTES", strconv.FormatInt(e.IngestMaxBytes, 10)},
		{"INGEST_ALLOW_PRIVATE", strconv.FormatBool(e.IngestAllowPrivate)},
		{"INGEST_CONCURRENCY", strconv.Itoa(e.IngestConcurrency)},
		{"INGEST_LEASE_SECONDS", strconv.Itoa(int(e.IngestLease.Seconds()))},
		{"INGEST_KEEP_FAILED_DAYS", strconv.Itoa(int(e.IngestKeepFailed.Hours() / 24))},
		{"RAW_STORE_URL", redactURL(e.RawStoreURL)},
		{"LOG_LEVEL", e.LogLevel.String()},
		{"API_KEY_PEPPER", secret(e.KeyPepper)},
		{"EMBEDDING_PROVIDER", e.EmbeddingProvider},
		{"EMBEDDING_MODEL", e.EmbeddingModel},
		{"EMBEDDING_DIMENSIONS", strconv.Itoa(e.EmbeddingDimensions)},
		{"EMBEDDING_BASE_URL", redactURL(e.EmbeddingBaseURL)},
		{"EMBEDDING_API_KEY", secret(e.EmbeddingAPIKey)},
		{"EMBEDDING_TIMEOUT_MS", strconv.FormatInt(e.EmbeddingTimeout.Milliseconds(), 10)},
		{"QUERY_EMBEDDING_CACHE_SIZE", strconv.Itoa(e.QueryCacheSize)},
		{"QUERY_EMBEDDING_CACHE_SECRET", secret(e.QueryCacheSecret)},
		{"ENRICHMENT_CONCURRENCY", strconv.Itoa(e.WorkerConcurrency)},
		{"ENRICHMENT_BATCH_WAIT_MS", strconv.FormatInt(e.BatchWait.Milliseconds(), 10)},
		{"EXTRACTION_ENABLED", strconv.FormatBool(e.Extraction.Enabled)},
		{"EXTRACTION_PROVIDER", e.Extraction.Provider},
		{"EXTRACTION_MODEL", e.Extraction.Model},
		{"EXTRACTION_BASE_URL", redactURL(e.Extraction.BaseURL)},
		{"EXTRACTION_API_KEY", secret(e.Extraction.APIKey)},
		{"EXTRACTION_TIMEOUT_MS", fmt.Sprint(e.Extraction.Timeout.Milliseconds())},
	}
}

// redactURLs redacts each connection string of a list.
func redactURLs(us []string) string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = redactURL(u)
	}
	return strings.Join(out, ",")
}
