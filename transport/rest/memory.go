package rest

import (
	"net/http"

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
// false and confirmed is true (then eligible context is archived).
type groomRequest struct {
	DryRun    *bool    `json:"dry_run"`
	Confirmed bool     `json:"confirmed"`
	OlderThan string   `json:"older_than"`
	Limit     int      `json:"limit"`
	Topic     string   `json:"topic"`
	SessionID string   `json:"session_id"`
	Tags      []string `json:"tags"`
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
	mode := postgram.GroomDryRun
	if req.DryRun != nil && !*req.DryRun {
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
	s.writeJSON(w, r, http.StatusOK, res)
}
