package rest

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
)

func (s *Server) memoryRoutes() {
	s.api.HandleFunc("/api/memory/session-context", s.storeSessionContext).Methods(http.MethodPost)
	s.api.HandleFunc("/api/memory/session-context/groom", s.groomSessionContext).Methods(http.MethodPost)
}

// sessionContextRequest is the body of POST /api/memory/session-context.
type sessionContextRequest struct {
	Content    string         `json:"content"`
	Visibility string         `json:"visibility"`
	Owner      string         `json:"owner"`
	SessionID  string         `json:"session_id"`
	AgentID    string         `json:"agent_id"`
	Topic      string         `json:"topic"`
	Tags       []string       `json:"tags"`
	Promotable *bool          `json:"promotable"`
	GroomAfter string         `json:"groom_after"`
	ExpiresAt  string         `json:"expires_at"`
	Metadata   map[string]any `json:"metadata"`
}

func (s *Server) storeSessionContext(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	var req sessionContextRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := c.StoreSessionContext(r.Context(), postgram.SessionContextInput{Content: req.Content,
		Visibility: postgram.Visibility(req.Visibility), Owner: req.Owner, SessionID: req.SessionID, AgentID: req.AgentID,
		Topic: req.Topic, Tags: req.Tags, Promotable: req.Promotable, GroomAfter: req.GroomAfter, ExpiresAt: req.ExpiresAt,
		Metadata: req.Metadata})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/entities/"+e.ID.String())
	s.writeJSON(w, r, http.StatusCreated, entityResponse{Entity: e})
}

// groomRequest is the body of POST /api/memory/session-context/groom. It
// grooms the caller's own session context: a dry run unless dry_run is
// false and confirmed is true (then eligible context is archived). The
// reference server's spellings are accepted too: dryRun for dry_run and
// older_than_ms (milliseconds) for older_than.
type groomRequest struct {
	DryRun      *bool    `json:"dry_run"`
	DryRunCamel *bool    `json:"dryRun"`
	Confirmed   bool     `json:"confirmed"`
	OlderThan   string   `json:"older_than"`
	OlderThanMS *int64   `json:"older_than_ms"`
	Limit       int      `json:"limit"`
	Topic       string   `json:"topic"`
	SessionID   string   `json:"session_id"`
	Tags        []string `json:"tags"`
}

// maxOlderThanMS bounds older_than_ms (3650 days, as the reference CLI).
const maxOlderThanMS = 3650 * 24 * 3600 * 1000

// groomResponse is the library's GroomResult (its eligible count as
// eligible_count) with the reference server's fields beside it: dryRun,
// skipped (eligible context that was neither archived nor promoted),
// eligible (the candidates, whole) and promotions.
type groomResponse struct {
	*postgram.GroomResult
	EligibleCount int              `json:"eligible_count"`
	Eligible      []groomCandidate `json:"eligible"`
	DryRunCamel   bool             `json:"dryRun"`
	Skipped       int              `json:"skipped"`
	Promotions    []groomPromotion `json:"promotions"`
}

// groomCandidate is an eligible session context in the reference
// server's shape (owner null when unset; createdAt beside created_at).
type groomCandidate struct {
	ID         uuid.UUID      `json:"id"`
	Content    string         `json:"content"`
	Visibility string         `json:"visibility"`
	Owner      *string        `json:"owner"`
	Tags       []string       `json:"tags"`
	Metadata   map[string]any `json:"metadata"`
	CreatedAt  time.Time      `json:"createdAt"`
	CreatedAt2 time.Time      `json:"created_at"`
}

type groomPromotion struct {
	SourceID  uuid.UUID `json:"sourceId"`
	DurableID uuid.UUID `json:"durableId"`
}

func newGroomResponse(res *postgram.GroomResult) groomResponse {
	out := groomResponse{GroomResult: res, EligibleCount: res.Eligible, Eligible: []groomCandidate{},
		DryRunCamel: res.DryRun, Promotions: []groomPromotion{}}
	if !res.DryRun {
		out.Skipped = max(0, res.Eligible-res.Archived-res.Promoted)
	}
	for _, it := range res.Items {
		if e := it.Entity; e != nil {
			c := groomCandidate{ID: e.ID, Content: e.Content, Visibility: string(e.Visibility), Tags: e.Tags,
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
			out.Promotions = append(out.Promotions, groomPromotion{SourceID: it.ID, DurableID: *it.PromotedTo})
		}
	}
	return out
}

func (s *Server) groomSessionContext(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	var req groomRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	dry := req.DryRun
	if dry == nil {
		dry = req.DryRunCamel
	} else if req.DryRunCamel != nil && *req.DryRunCamel != *dry {
		s.writeError(w, r, invalid("dryRun", "contradicts dry_run: send one of them"))
		return
	}
	if req.OlderThanMS != nil {
		if req.OlderThan != "" {
			s.writeError(w, r, invalid("older_than_ms", "cannot be combined with older_than: send one of them"))
			return
		}
		if ms := *req.OlderThanMS; ms < 0 || ms > maxOlderThanMS {
			s.writeError(w, r, invalid("older_than_ms", fmt.Sprintf("must be between 0 and %d (3650 days)", int64(maxOlderThanMS))))
			return
		}
		req.OlderThan = strconv.FormatInt(*req.OlderThanMS/1000, 10) + "s"
	}
	mode := postgram.GroomDryRun
	if dry != nil && !*dry {
		if !req.Confirmed {
			s.writeError(w, r, invalid("confirmed", "archiving needs confirmed: true (or send dry_run: true to preview)"))
			return
		}
		mode = postgram.GroomArchive
	}
	res, err := c.GroomSessionContext(r.Context(), postgram.GroomRequest{Mode: mode, OlderThan: req.OlderThan, Limit: req.Limit,
		Topic: req.Topic, SessionID: req.SessionID, Tags: req.Tags})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, newGroomResponse(res))
}
