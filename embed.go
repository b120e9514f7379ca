package postgram

import "context"

// Embedder turns texts into vectors. Implementations live in providers/
// (openai, ollama) and in postgramtest (a deterministic one for tests).
//
// EmbedBatch must return exactly one vector per input, in input order, each
// of length Dimensions(). It is called by the enrichment worker with many
// chunks at once and by search with a single query. Errors should wrap
// ErrEmbeddingFailed (provider said no), ErrUnavailable (could not reach it)
// or ErrRateLimited.
type Embedder interface {
	EmbedBatch(ctx context.Context, texts []string) ([][]float32, error)
	// Model describes the model; it identifies stored embeddings, so two
	// embedders with the same ModelInfo must produce comparable vectors.
	Model() ModelInfo
}

// MaxBatcher is optionally implemented by embedders whose provider limits
// the number of inputs per request. The worker never sends more.
type MaxBatcher interface {
	MaxBatch() int
}
