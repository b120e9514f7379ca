package mcp

import (
	"context"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/wire"
)

// defaultFailureLimit is how many failures include_failures lists when
// failure_limit is not given.
const defaultFailureLimit = 10

// queueCompact is the compact queue answer: the counts, and failures
// without their paths and timestamps.
type queueCompact struct {
	Embedding  driver.EmbeddingQueue   `json:"embedding"`
	Extraction *driver.ExtractionQueue `json:"extraction"`
	Failures   []queueFailureRow       `json:"failures,omitempty"`
}

type queueFailureRow struct {
	ID    uuid.UUID           `json:"id"`
	Type  postgram.EntityType `json:"type"`
	Kind  string              `json:"kind"`
	Error string              `json:"error"`
}

func queueTools() []toolSpec {
	return []toolSpec{{
		Name:  "queue",
		Title: "Enrichment queue status",
		Description: "Report the asynchronous enrichment queue: entities waiting for their embedding (pending), " +
			"completed, failed, failures still to be retried (retry_eligible) and the age of the oldest pending one; " +
			"extraction counts when LLM extraction is enabled (else null). Use it to explain why a fresh write is not " +
			"yet found by meaning-based search (keyword search finds it at once), or to inspect failures.",
		Params: []param{
			{Name: "include_failures", Kind: kindBoolean,
				Description: "Also list recent failures with their error messages."},
			{Name: "failure_limit", Kind: kindInteger, Min: ptr(1), Max: ptr(100),
				Description: "How many recent failures to list, 1..100 (default 10). Implies include_failures."},
		},
		ReadOnly:   true,
		Idempotent: true,
		Handler:    queueTool,
	}}
}

func queueTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	limit := 0
	if a.bool("include_failures") {
		limit = defaultFailureLimit
	}
	if v, ok := a.int("failure_limit"); ok {
		limit = clampInt(v) // the library checks the range
	}
	st, err := c.QueueStatus(ctx, limit)
	if err != nil {
		return reply{}, err
	}
	out := queueCompact{Embedding: st.Embedding, Extraction: st.Extraction}
	for _, f := range st.Failures {
		out.Failures = append(out.Failures, queueFailureRow{ID: f.ID, Type: f.Type, Kind: f.Kind, Error: f.Error})
	}
	return reply{Compact: out, Full: wire.NewQueueResponse(st, limit > 0)}, nil
}
