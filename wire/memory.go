package wire

import (
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
)

// SessionContextRequest is the body of POST /api/memory/session-context.
type SessionContextRequest struct {
	Content    string         `json:"content"`
	Visibility string         `json:"visibility,omitempty"`
	Owner      string         `json:"owner,omitempty"`
	SessionID  string         `json:"session_id,omitempty"`
	AgentID    string         `json:"agent_id,omitempty"`
	Topic      string         `json:"topic,omitempty"`
	Tags       []string       `json:"tags,omitempty"`
	Promotable *bool          `json:"promotable,omitempty"`
	GroomAfter string         `json:"groom_after,omitempty"`
	ExpiresAt  string         `json:"expires_at,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// Input converts the body to the library's SessionContextInput.
func (r SessionContextRequest) Input() postgram.SessionContextInput {
	return postgram.SessionContextInput{Content: r.Content, Visibility: postgram.Visibility(r.Visibility),
		Owner: r.Owner, SessionID: r.SessionID, AgentID: r.AgentID, Topic: r.Topic, Tags: r.Tags,
		Promotable: r.Promotable, GroomAfter: r.GroomAfter, ExpiresAt: r.ExpiresAt, Metadata: r.Metadata}
}

// GroomRequest is the body of POST /api/memory/session-context/groom. It
// grooms the caller's own session context: a dry run unless dry_run is
// false and confirmed is true (then eligible context is archived). The
// reference server's spellings are accepted too: dryRun for dry_run and
// older_than_ms (milliseconds) for older_than.
type GroomRequest struct {
	DryRun      *bool    `json:"dry_run,omitempty"`
	DryRunCamel *bool    `json:"dryRun,omitempty"`
	Confirmed   bool     `json:"confirmed,omitempty"`
	OlderThan   string   `json:"older_than,omitempty"`
	OlderThanMS *int64   `json:"older_than_ms,omitempty"`
	Limit       int      `json:"limit,omitempty"`
	Topic       string   `json:"topic,omitempty"`
	SessionID   string   `json:"session_id,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// GroomResponse is the library's GroomResult (its eligible count as
// eligible_count) with the reference server's fields beside it: dryRun,
// skipped (eligible context that was neither archived nor promoted),
// eligible (the candidates, whole) and promotions.
type GroomResponse struct {
	*postgram.GroomResult
	EligibleCount int              `json:"eligible_count"`
	Eligible      []GroomCandidate `json:"eligible"`
	DryRunCamel   bool             `json:"dryRun"`
	Skipped       int              `json:"skipped"`
	Promotions    []GroomPromotion `json:"promotions"`
}

// GroomCandidate is an eligible session context in the reference
// server's shape (owner null when unset; createdAt beside created_at).
type GroomCandidate struct {
	ID         uuid.UUID      `json:"id"`
	Content    string         `json:"content"`
	Visibility string         `json:"visibility"`
	Owner      *string        `json:"owner"`
	Tags       []string       `json:"tags"`
	Metadata   map[string]any `json:"metadata"`
	CreatedAt  time.Time      `json:"createdAt"`
	CreatedAt2 time.Time      `json:"created_at"`
}

// GroomPromotion pairs a promoted session context with the durable
// memory it became.
type GroomPromotion struct {
	SourceID  uuid.UUID `json:"sourceId"`
	DurableID uuid.UUID `json:"durableId"`
}

// NewGroomResponse builds the wire answer of a grooming run.
func NewGroomResponse(res *postgram.GroomResult) GroomResponse {
	out := GroomResponse{GroomResult: res, EligibleCount: res.Eligible, Eligible: []GroomCandidate{},
		DryRunCamel: res.DryRun, Promotions: []GroomPromotion{}}
	if !res.DryRun {
		out.Skipped = max(0, res.Eligible-res.Archived-res.Promoted)
	}
	for _, it := range res.Items {
		if e := it.Entity; e != nil {
			c := GroomCandidate{ID: e.ID, Content: e.Content, Visibility: string(e.Visibility), Tags: e.Tags,
				Metadata: e.Metadata, CreatedAt: e.CreatedAt, CreatedAt2: e.CreatedAt}
			if e.Owner != "" {
				o := e.Owner
				c.Owner = &o
			}
			if c.Tags == nil {
				c.Tags = []string{}
			}
			if c.Metadata == nil {
				c.Metadata = map[string]any{}
			}
			out.Eligible = append(out.Eligible, c)
		}
		if it.PromotedTo != nil {
			out.Promotions = append(out.Promotions, GroomPromotion{SourceID: it.ID, DurableID: *it.PromotedTo})
		}
	}
	return out
}
