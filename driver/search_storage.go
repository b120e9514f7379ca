package driver

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

// Refresher is implemented by stores whose reads first check whether other
// processes committed since the last read (SQLite, whose in-memory indexes
// follow the file). Refresh runs that check once and returns a context
// under which the store's reads skip it: a search makes several reads, and
// every commit that finished before the search began is reflected in all of
// them. The context is for one operation; it is not a snapshot.
type Refresher interface {
	Refresh(ctx context.Context) (context.Context, error)
}

// KeywordFiller is implemented by stores that can build the whole keyword
// pool in one call (one statement on PostgreSQL) instead of one probe per
// step. The library still decides the order of the terms; the store only
// runs the steps.
type KeywordFiller interface {
	// KeywordFill returns the chunks matching every term (at most
	// q.Limit), then the head matches q.Heads asks for, then, while the
	// pool holds fewer than q.Limit chunks, the chunks matching each term
	// of q.Order in turn that are not in the pool yet (each step capped at
	// the room left, in unspecified order). Hits are scored as
	// KeywordProbe scores them without a Vector.
	KeywordFill(ctx context.Context, ws string, q KeywordFillQuery) (KeywordFillResult, error)
}

// KeywordFillQuery is a whole keyword pool (see KeywordFiller).
type KeywordFillQuery struct {
	Filter EntityFilter
	Terms  []string
	// Order lists indexes into Terms: the per-term steps, in turn (with
	// one term there is no step: it is the conjunction).
	Order []int
	Limit int
	// Alternatives and Features are as in KeywordQuery.
	Alternatives [][]string
	Features     bool
	// Heads, when positive, adds after the conjunction's chunks (room
	// permitting) up to Heads entities not in the pool yet whose head
	// (rank.Head: name fields) matches a term, taking the terms of
	// HeadTerms in turn, each entity represented by its first chunk: an
	// entity whose name is only in its metadata is found by that name.
	Heads int
	// HeadTerms lists indexes into Terms: the terms the heads step looks
	// up, in turn (the library passes the rare ones: a common word names
	// too many entities to help, and costs a large index scan).
	HeadTerms []int
	// ScanTerms lists indexes into Terms held by so large a share of the
	// workspace's chunks that their step fills its room after a short
	// walk: a store may take such a step by walking the workspace's
	// chunks (in any fixed order) and keeping the first that match,
	// instead of collecting every match from its index first (a term in
	// 16% of a million chunks: 161,366 matches gathered to keep 199). A
	// hint; the step's result is any Limit-bounded set of matches either
	// way. The library passes the terms rank.Walkable accepts: an
	// expected walk of at most 4,000 chunks and a twentieth of the
	// term's matches.
	ScanTerms []int
}

// KeywordFillResult is a filled pool.
type KeywordFillResult struct {
	// Hits are the conjunction's hits first, then each step's.
	Hits []KeywordHit
	// Conjunction is how many of Hits matched every term.
	Conjunction int
}
