package rest

import (
	"net/http"

	"github.com/postgram-go/postgram/wire"
)

func (s *Server) queueRoutes() {
	s.api.HandleFunc("/api/queue", s.queue).Methods(http.MethodGet)
}

// queueParams are the query parameters of GET /api/queue.
var queueParams = []string{"include_failures", "failure_limit"}

// defaultFailureLimit is how many failures GET /api/queue lists when
// failure_limit is absent (the library bounds it: 0 to 100).
const defaultFailureLimit = 20

func (s *Server) queue(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	p := params(r, queueParams...)
	include := p.bool("include_failures", false)
	limit := p.int("failure_limit", defaultFailureLimit)
	if p.err != nil {
		s.writeError(w, r, p.err)
		return
	}
	if _, given := p.one("failure_limit"); !include && !given {
		limit = 0 // a given failure_limit still goes to the library, which checks it
	}
	st, err := c.QueueStatus(r.Context(), limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, wire.NewQueueResponse(st, include))
}
