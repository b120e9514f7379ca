package driver

import (
	"context"
	"time"
)

// ModelStorage is the part of Storage that manages embedding models. The
// active model is store-wide (every workspace embeds with it); changing it
// is an explicit operator act (pgm-admin embeddings migrate), never a side
// effect of starting a server with other settings.
type ModelStorage interface {
	// ListModels lists the registered models, oldest first.
	ListModels(ctx context.Context) ([]ModelRecord, error)
	// ActivateModel registers m when needed, makes it the only active
	// model (creating its vector index), and returns its id.
	ActivateModel(ctx context.Context, m ModelInfo) (int64, error)
	// QueueReembed marks entities of workspace ws (every workspace when ws
	// is "") pending for embedding again, with fresh attempts; types, when
	// non-empty, restricts their type. It returns how many it queued.
	QueueReembed(ctx context.Context, ws string, types []EntityType) (int, error)
}

// ModelRecord is a registered embedding model.
type ModelRecord struct {
	ID int64 `json:"id"`
	ModelInfo
	Active    bool      `json:"active"`
	CreatedAt time.Time `json:"created_at"`
}
