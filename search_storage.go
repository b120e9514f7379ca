package postgram

import (
	"context"

	"github.com/google/uuid"
)

// SimilarityScorer is implemented by stores for which computing a chunk's
// similarity costs a read of its stored vector (PostgreSQL). The keyword
// branch then scores its pool without similarities, and the library asks
// for the few that decide the top results (fusion.Unsettled) instead of
// all of them. Stores holding vectors in memory need not implement it.
type SimilarityScorer interface {
	// ChunkSimilarities returns the cosine similarity to vec of each chunk
	// among ids that has an embedding of modelID; others are absent.
	ChunkSimilarities(ctx context.Context, ws string, modelID int64, vec []float32, ids []uuid.UUID) (map[uuid.UUID]float64, error)
}
