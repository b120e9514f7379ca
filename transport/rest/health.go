package rest

import (
	"context"
	"net/http"
	"time"

	"github.com/postgram-go/postgram/wire"
)

func (s *Server) healthRoutes() {
	s.router.HandleFunc("/health", s.health).Methods(http.MethodGet, http.MethodHead)
}

// healthTimeout bounds the store ping of /health.
const healthTimeout = 5 * time.Second

// health reports the server's dependencies: 200 when the store answers
// (status "degraded" when embedding is failing or off, or the store is
// read_only because its writes fail for a full disk: reads and keyword
// search still work, so a load balancer must keep the instance), 503 with
// status "unavailable" when the store does not.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	h, err := s.admin.Health(ctx)
	resp := wire.Health{
		Status:    h.Status,
		Version:   s.cfg.Version,
		Store:     wire.StoreHealth{Name: h.Store.Name, State: h.Store.State},
		Embedding: wire.EmbeddingHealth{State: h.Embedding.State, Model: h.Embedding.Model},
		Warnings:  s.cfg.Warnings,
	}
	if s.cfg.BackupStatus != nil {
		b := s.cfg.BackupStatus()
		resp.Backup = &b
	}
	if h.Embedding.Error != "" || (err == nil && h.Store.Error != "") {
		s.log.Debug("health: degraded", "request_id", RequestIDFrom(r.Context()),
			"store_state", h.Store.State, "store_reason", h.Store.Error, "embedding_state", h.Embedding.State, "embedding_err", h.Embedding.Error)
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
