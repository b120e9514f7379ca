package driver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// BackupStorage is implemented by stores that can be backed up whole and
// restored (package backup, pgm-admin backup and restore). Unlike
// TransferStorage it covers every workspace and every table a restore
// needs: embedding models, entities with their queue and extraction state,
// chunks with every embedding, edges, API keys (hashes only), the audit
// log and sync state. The persisted query-embedding cache (derived) and
// queue leases (process-local) are left out.
type BackupStorage interface {
	// ReadBackup reads the whole store from ONE consistent snapshot
	// (PostgreSQL: a REPEATABLE READ, read-only transaction; SQLite: one
	// read transaction), calling sink table by table in this order:
	// models (by id), entities with their chunks (by workspace and id;
	// chunks by index), edges, keys, audit entries, sync files (each by
	// workspace and primary key). It reads in pages, so memory does not
	// grow with the store, and stops at the first error a callback
	// returns, returning it unchanged.
	ReadBackup(ctx context.Context, sink BackupSink) error
	// BackupRowCounts counts the rows of each backed-up table (keys as in
	// the Backup* constants), for a restore's emptiness check.
	BackupRowCounts(ctx context.Context) (map[string]int64, error)

	// The Restore* methods write records exactly as given (ids,
	// timestamps, versions, hashes) in one transaction per call, into a
	// store that is being restored (empty, not yet serving). Models first
	// (their ids are kept, since chunks name them), then entities, edges,
	// keys, audit and sync files.
	RestoreModels(ctx context.Context, models []BackupModel) error
	RestoreEntities(ctx context.Context, recs []*BackupEntity) error
	RestoreEdges(ctx context.Context, edges []BackupEdge) error
	RestoreKeys(ctx context.Context, keys []BackupKey) error
	RestoreAudit(ctx context.Context, entries []BackupAudit) error
	RestoreSyncFiles(ctx context.Context, files []BackupSyncFile) error
	// FinishRestore builds what the Restore* calls deferred (vector
	// indexes, statistics) once every record is in.
	FinishRestore(ctx context.Context) error
}

// Table names of a backup, as counted in its manifest.
const (
	BackupModels    = "embedding_models"
	BackupEntities  = "entities"
	BackupChunks    = "chunks"
	BackupVectors   = "embeddings"
	BackupEdges     = "edges"
	BackupKeys      = "api_keys"
	BackupAuditLog  = "audit_log"
	BackupSyncFiles = "sync_files"
)

// BackupSink receives a snapshot's records (BackupStorage.ReadBackup).
// The records are only valid during the call.
type BackupSink struct {
	Model    func(*BackupModel) error
	Entity   func(*BackupEntity) error
	Edge     func(*BackupEdge) error
	Key      func(*BackupKey) error
	Audit    func(*BackupAudit) error
	SyncFile func(*BackupSyncFile) error
}

// BackupModel is an embedding model as stored.
type BackupModel struct {
	ID int64 `json:"id"`
	ModelInfo
	Active    bool      `json:"active"`
	CreatedAt time.Time `json:"created_at"`
}

// BackupEntity is an entity as stored, with its chunks and every field a
// restore needs (queue leases excepted).
type BackupEntity struct {
	Workspace string `json:"workspace"`
	// Entity holds every field but Metadata (left nil): the metadata
	// travels as the stored JSON object in Metadata.
	Entity             Entity          `json:"entity"`
	Metadata           json.RawMessage `json:"metadata"`
	ChunkGeneration    int64           `json:"chunk_generation"`
	EnrichmentQueuedAt *time.Time      `json:"enrichment_queued_at,omitempty"`
	EnrichmentRetryAt  *time.Time      `json:"enrichment_retry_at,omitempty"`
	ExtractionQueuedAt *time.Time      `json:"extraction_queued_at,omitempty"`
	ExtractionRetryAt  *time.Time      `json:"extraction_retry_at,omitempty"`
	ExtractionProvider string          `json:"extraction_provider,omitempty"`
	ExtractionModel    string          `json:"extraction_model,omitempty"`
	Chunks             []BackupChunk   `json:"chunks"`
}

// BackupChunk is a chunk as stored, with its embedding and the id of the
// model that made it (0 and nil when it has none).
type BackupChunk struct {
	ID        uuid.UUID `json:"id"`
	Index     int       `json:"index"`
	Content   string    `json:"content"`
	Start     int       `json:"start"`
	End       int       `json:"end"`
	ModelID   int64     `json:"model_id,omitempty"`
	Embedding []float32 `json:"-"`
}

// BackupEdge is an edge as stored.
type BackupEdge struct {
	Workspace string `json:"workspace"`
	Edge
}

// BackupKey is an API key as stored: its digest, never a secret.
type BackupKey struct {
	Workspace string `json:"workspace"`
	APIKey
	Hash []byte `json:"hash"`
}

// BackupAudit is an audit entry as stored.
type BackupAudit struct {
	Workspace string `json:"workspace"`
	AuditEntry
}

// BackupSyncFile is a synced file's state as stored.
type BackupSyncFile struct {
	Workspace  string    `json:"workspace"`
	Repo       string    `json:"repo"`
	Path       string    `json:"path"`
	SHA        string    `json:"sha"`
	EntityID   uuid.UUID `json:"entity_id"`
	Status     string    `json:"sync_status"`
	LastSynced time.Time `json:"last_synced"`
}
