package rest

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/wire"
)

func (s *Server) memoryRoutes() {
	s.api.HandleFunc("/api/memory/session-context", s.storeSessionContext).Methods(http.MethodPost)
	s.api.HandleFunc("/api/memory/session-context/groom", s.groomSessionContext).Methods(http.MethodPost)
}

func (s *Server) storeSessionContext(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	var req wire.SessionContextRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := c.StoreSessionContext(r.Context(), req.Input())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/entities/"+e.ID.String())
	s.writeJSON(w, r, http.StatusCreated, wire.EntityResponse{Entity: e})
}

// maxOlderThanMS bounds older_than_ms (3650 days, as the reference CLI).
const maxOlderThanMS = 3650 * 24 * 3600 * 1000

func (s *Server) groomSessionContext(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	var req wire.GroomRequest
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
	s.writeJSON(w, r, http.StatusOK, wire.NewGroomResponse(res))
}
