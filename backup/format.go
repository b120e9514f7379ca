// Package backup writes and restores whole-store backups of Postgram
// (pgm-admin backup and restore, the server's scheduled backups and its
// streamed admin backup): one consistent snapshot of every workspace, in a
// versioned, compressed, portable format with a manifest, optionally
// encrypted with age.
//
// # Format (version 1)
//
// A backup file is either an age file (https://age-encryption.org/v1,
// passphrase or X25519 recipients) whose plaintext is a plain backup, or a
// plain backup:
//
//	"PGMBACKUP\n"  magic (10 bytes)
//	zstd stream of records
//
// Each record is
//
//	kind      1 byte: 'H' header, 'm' model, 'e' entity, 'd' edge, 'k' key,
//	          'a' audit entry, 's' sync file, 'M' manifest
//	jsonLen   uvarint, then that many bytes of JSON
//	vecLen    uvarint, then that many bytes: entity records only, every
//	          embedding of the entity's chunks (in chunk order, those with
//	          a model), as little-endian float32s
//
// The header comes first and the manifest last; in between come models,
// then entities (with chunks), edges, keys, audit entries and sync files,
// each ordered by workspace (byte order) and primary key, so the same
// store gives the same records from either backend. The manifest holds
// the format version, the store kind, the active embedding model, the
// count of every table and the SHA-256 of every table's records (kind byte,
// JSON and vectors), and the SHA-256 of every byte before it: a file
// without a manifest, or whose bytes do not match it, is refused. A
// restore verifies the manifest twice: while reading, and after writing,
// by reading the restored store back and comparing counts and checksums.
//
// Metadata JSON is canonical (compact, keys sorted, numbers as written),
// edge confidences are float32 values and timestamps UTC microseconds, so
// a SQLite store and a PostgreSQL store holding the same data give equal
// checksums.
//
// Left out: the persisted query-embedding cache (derived; rebuilt by
// searches) and queue leases (process-local).
package backup

import (
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// FormatName and FormatVersion identify the format.
const (
	FormatName    = "postgram-backup"
	FormatVersion = 1
)

// Magic starts every plain backup stream.
const Magic = "PGMBACKUP\n"

// ageMagic starts an age file (binary or armored).
const (
	ageMagic      = "age-encryption.org/v1\n"
	ageArmorMagic = "-----BEGIN AGE ENCRYPTED FILE-----"
)

// Record kinds.
const (
	kindHeader   byte = 'H'
	kindModel    byte = 'm'
	kindEntity   byte = 'e'
	kindEdge     byte = 'd'
	kindKey      byte = 'k'
	kindAudit    byte = 'a'
	kindSyncFile byte = 's'
	kindManifest byte = 'M'
)

// tableOf maps a record kind to the manifest table it counts in.
var tableOf = map[byte]string{
	kindModel:    driver.BackupModels,
	kindEntity:   driver.BackupEntities,
	kindEdge:     driver.BackupEdges,
	kindKey:      driver.BackupKeys,
	kindAudit:    driver.BackupAuditLog,
	kindSyncFile: driver.BackupSyncFiles,
}

// maxRecordBytes bounds one record's JSON or vectors: larger is corrupt.
const maxRecordBytes = 1 << 30

// Header is a backup's first record.
type Header struct {
	Format    string              `json:"format"`
	Version   int                 `json:"version"`
	CreatedAt time.Time           `json:"created_at"`
	Store     string              `json:"store"`
	Model     *postgram.ModelInfo `json:"model"`
}

// Manifest is a backup's last record: what it holds and how to check it.
type Manifest struct {
	Format    string              `json:"format"`
	Version   int                 `json:"version"`
	CreatedAt time.Time           `json:"created_at"`
	Store     string              `json:"store"`
	Model     *postgram.ModelInfo `json:"model"`
	// Counts has a row count per table: embedding_models, entities,
	// chunks, embeddings, edges, api_keys, audit_log, sync_files.
	Counts map[string]int64 `json:"counts"`
	// SHA256 has the hex SHA-256 of each table's records.
	SHA256 map[string]string `json:"sha256"`
	// StreamSHA256 is the hex SHA-256 of the plain stream's bytes before
	// the manifest record (after decompression).
	StreamSHA256 string `json:"stream_sha256"`
	// Seconds is how long the snapshot took to read and write.
	Seconds float64 `json:"seconds"`
}

// Tables lists the manifest's tables in restore order.
var Tables = []string{driver.BackupModels, driver.BackupEntities, driver.BackupChunks, driver.BackupVectors,
	driver.BackupEdges, driver.BackupKeys, driver.BackupAuditLog, driver.BackupSyncFiles}
