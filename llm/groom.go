package llm

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Groomer is the LLM side of grooming (the configured extraction model).
// Implementations must be safe for concurrent use. Grooming calls it for
// one memory at a time and never shows it memories of two client scopes
// together.
type Groomer interface {
	// PromoteSessionContext decides whether a session context holds
	// something future agents should trust, and if so distils it.
	PromoteSessionContext(ctx context.Context, c SessionCandidate) (PromotionDecision, error)
	// ReviewDurable classifies a durable memory.
	ReviewDurable(ctx context.Context, c DurableCandidate) (DurableReview, error)
	// RewriteDurable rewrites a memory marked needs_grooming.
	RewriteDurable(ctx context.Context, c DurableCandidate, reason string) (string, error)
}

// SessionCandidate is a session context shown to a Groomer.
type SessionCandidate struct {
	ID        uuid.UUID `json:"id"`
	Content   string    `json:"content"`
	Topic     string    `json:"topic,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	Tags      []string  `json:"tags,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// PromotionDecision is a Groomer's answer for one session context.
type PromotionDecision struct {
	Promote bool `json:"promote"`
	// Content is the distilled durable memory (required when Promote).
	Content string   `json:"content,omitempty"`
	Tags    []string `json:"tags,omitempty"`
	Reason  string   `json:"reason,omitempty"`
}

// DurableCandidate is a durable memory shown to a Groomer.
type DurableCandidate struct {
	ID        uuid.UUID      `json:"id"`
	Content   string         `json:"content"`
	Tags      []string       `json:"tags,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// Durable grooming outcomes.
const (
	OutcomeKeep          = "keep"
	OutcomeNeedsGrooming = "needs_grooming"
	OutcomeArchive       = "archive"
	OutcomeSuperseded    = "superseded"
)

// DurableReview is a Groomer's classification of a durable memory.
type DurableReview struct {
	Outcome string `json:"outcome"` // keep, needs_grooming, archive or superseded
	Reason  string `json:"reason"`
	// Suggestion is a rewrite of the content (for needs_grooming).
	Suggestion string `json:"suggestion,omitempty"`
	// SupersededBy names the memory that replaces this one (superseded).
	SupersededBy string `json:"superseded_by,omitempty"`
}
