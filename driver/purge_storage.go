package driver

import (
	"context"

	"github.com/google/uuid"
)

// PurgeStorage is implemented by stores that can hard-delete entities
// (Admin.Purge, pgm-admin purge).
type PurgeStorage interface {
	// PurgeEntities deletes, in one transaction, the workspace's entities
	// among ids with everything that holds or derives from their content:
	// chunks and embeddings, every edge with a purged end and every
	// derived edge they originated (as Delete retracts), their sync state
	// and the workspace's persisted query embeddings. It counts what it
	// deleted and appends audit (when non-nil) in the same transaction,
	// its Details extended with the counts. Ids that do not exist are
	// skipped. The audit log is never touched.
	PurgeEntities(ctx context.Context, ws string, ids []uuid.UUID, audit *AuditEntry) (PurgeCounts, error)
	// ScrubDeleted makes the content of deleted rows unrecoverable from
	// the store's files as far as the backend allows (SQLite: secure
	// delete, VACUUM and a truncated WAL; PostgreSQL: folded statistics
	// and VACUUM of the affected tables).
	ScrubDeleted(ctx context.Context) error
}

// PurgeCounts counts what a purge deleted.
type PurgeCounts struct {
	Entities        int `json:"entities"`
	Chunks          int `json:"chunks"`
	Edges           int `json:"edges"`
	SyncFiles       int `json:"sync_files"`
	QueryEmbeddings int `json:"query_embeddings"`
}

// Add adds o to p.
func (p *PurgeCounts) Add(o PurgeCounts) {
	p.Entities += o.Entities
	p.Chunks += o.Chunks
	p.Edges += o.Edges
	p.SyncFiles += o.SyncFiles
	p.QueryEmbeddings += o.QueryEmbeddings
}

// Details returns the counts as audit details.
func (p PurgeCounts) Details() map[string]any {
	return map[string]any{"entities": p.Entities, "chunks": p.Chunks, "edges": p.Edges,
		"sync_files": p.SyncFiles, "query_embeddings": p.QueryEmbeddings}
}
