package driver

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Queue names one of an entity's asynchronous stages. Each has the same
// queue columns on the entities table, prefixed with the stage's name
// (enrichment_status, enrichment_attempts, enrichment_retry_at,
// enrichment_leased_until, enrichment_queued_at, enrichment_error; the same
// with extraction_), so a backend implements claiming and failing once for
// both.
type Queue string

// Queues.
const (
	QueueEmbedding  Queue = "enrichment" // chunks to embed (the enrichment worker)
	QueueExtraction Queue = "extraction" // LLM relation extraction
)

// Column returns the name of the queue's column for field (status,
// attempts, error, retry_at, leased_until, queued_at). It panics on an
// unknown queue: the name goes into SQL text, so only the constants above
// are accepted.
func (q Queue) Column(field string) string {
	switch q {
	case QueueEmbedding, QueueExtraction:
		return string(q) + "_" + field
	}
	panic(fmt.Sprintf("driver: unknown queue %q", string(q)))
}

// WorkClaim asks for due work of one queue.
type WorkClaim struct {
	Queue       Queue
	Max         int
	MaxAttempts int
	Lease       time.Duration
	// AfterEmbedding (extraction) claims only entities whose embedding
	// is completed.
	AfterEmbedding bool
}

// Lease is an entity claimed from a queue.
type Lease struct {
	EntityID   uuid.UUID
	Generation int64 // chunk generation at claim time
	Attempts   int
	// Override (extraction) is the per-entity provider/model
	// (pgm-admin improve-graph).
	Override ExtractOverride
}

// StageQueue is the work queue both asynchronous stages share.
type StageQueue interface {
	// ClaimWork leases up to c.Max entities whose stage c.Queue is due
	// (pending, or failed with attempts < c.MaxAttempts and a passed retry
	// time, and not leased), oldest queued first, skipping rows another
	// worker holds (SKIP LOCKED on PostgreSQL, the single writer on
	// SQLite); a lease that expires (a crashed worker) makes the entity
	// claimable again.
	ClaimWork(ctx context.Context, ws string, c WorkClaim) ([]Lease, error)
	// FailWork records errMsg on each lease's entity, increments its
	// attempts, schedules the next attempt at retryAt and releases the
	// lease, for the entities whose chunk generation is unchanged.
	FailWork(ctx context.Context, ws string, q Queue, leases []Lease, errMsg string, retryAt time.Time) error
	// RetryFailed makes every failed entity of queue q due again now, with
	// fresh attempts (an operator's retry after fixing the cause), and
	// returns how many.
	RetryFailed(ctx context.Context, ws string, q Queue) (int, error)
}
