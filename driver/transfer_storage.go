package driver

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
)

// TransferStorage is the part of Storage that moves a whole workspace
// between stores (package transfer, pgm-admin export/import): it reads
// every entity, chunk, embedding and edge as stored, and writes them back
// keeping ids, versions and timestamps. It is embedded in Storage.
type TransferStorage interface {
	// ExportWorkspace reads ws from one consistent snapshot, calling entity
	// for every entity (ordered by id) with its chunks (ordered by index),
	// and then edge for every edge (ordered by id). When modelID is not 0
	// each chunk carries its embedding for that model (chunks without one,
	// or with another model's, carry none). It reads in pages, so memory
	// does not grow with the workspace, and stops at the first error a
	// callback returns, returning it.
	ExportWorkspace(ctx context.Context, ws string, modelID int64, entity func(*EntityRecord) error, edge func(*Edge) error) error
	// ImportEntities inserts the entities with their chunks and embeddings
	// (for modelID) in one transaction, exactly as given: ids, versions,
	// timestamps, enrichment and extraction state. It does not validate
	// beyond the schema's constraints; the caller does. An entity whose id
	// exists in ws is skipped when skipExisting (its chunks too), else the
	// whole call fails with an error wrapping ErrConflict that names the
	// id. Pending entities are queued for enrichment (and workers woken).
	// It returns how many entities it inserted.
	ImportEntities(ctx context.Context, ws string, modelID int64, recs []*EntityRecord, skipExisting bool) (int, error)
	// ImportEdges inserts edges as given (ids, provenance, timestamps) in
	// one transaction. An edge whose id, or whose (source_id, target_id,
	// relation), exists is skipped when skipExisting, else the call fails
	// with an error wrapping ErrConflict. An edge whose end is not an
	// entity of ws fails with ErrInvalidArgument. It returns how many
	// edges it inserted.
	ImportEdges(ctx context.Context, ws string, edges []Edge, skipExisting bool) (int, error)
}

// EntityRecord is an entity as stored, for export and import.
type EntityRecord struct {
	// Entity holds every field but Metadata (left nil): the metadata
	// travels as the stored JSON text in Metadata, so that no number or
	// nesting is re-encoded on the way.
	Entity Entity
	// Metadata is the entity's metadata, a JSON object.
	Metadata json.RawMessage
	Chunks   []ChunkRecord
}

// ChunkRecord is a chunk as stored, with its embedding when it has one
// (for the model asked about).
type ChunkRecord struct {
	ID        uuid.UUID
	Index     int
	Content   string
	Start     int
	End       int
	Embedding []float32
}
