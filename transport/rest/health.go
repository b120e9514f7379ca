package rest

import (
	"context"
	"net/http"
	"time"

	"github.com/postgram-go/postgram"
)

func (s *Server) healthRoutes() {
	s.router.HandleFunc("/health", s.health).Methods(http.MethodGet, http.MethodHead)
}

// healthTimeout bounds the store ping of /health.
const healthTimeout = 5 * time.Second

// healthResponse is the body of GET /health. It is open, so it carries
// states, not the store's error text (that is logged).
type healthResponse struct {
	Status    string                   `json:"status"` // ok, degraded or unavailable
	Version   string                   `json:"version"`
	Store     storeHealth              `json:"store"`
	Embedding postgram.EmbeddingHealth `json:"embedding"`
}

type storeHealth struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

// health reports the server's dependencies: 200 when the store answers
// (status "degraded" when embedding is failing or off: writes and keyword
// search still work, so a load balancer must keep the instance), 503 with
// status "unavailable" when the store does not.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	h, err := s.cfg.Client.Health(ctx)
	resp := healthResponse{
		Status:    h.Status,
		Version:   s.cfg.Version,
		Store:     storeHealth{Name: h.Store.Name, State: h.Store.State},
		Embedding: h.Embedding,
	}
	status := http.StatusOK
	if err != nil {
		s.log.Warn("health: store unavailable", "request_id", RequestIDFrom(r.Context()), "err", err)
		resp.Status = "unavailable"
		if resp.Store.State == "" || resp.Store.State == "ok" {
			resp.Store.State = "unavailable"
		}
		status = http.StatusServiceUnavailable
	}
	s.writeJSON(w, r, status, resp)
}
