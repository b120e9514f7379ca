package rest

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/wire"
)

func (s *Server) graphRoutes() {
	s.api.HandleFunc("/api/edges", s.createEdge).Methods(http.MethodPost)
	s.api.HandleFunc("/api/edges/{id}", s.deleteEdge).Methods(http.MethodDelete)
	s.api.HandleFunc("/api/entities/{id}/edges", s.entityEdges).Methods(http.MethodGet)
	s.api.HandleFunc("/api/entities/{id}/graph", s.entityGraph).Methods(http.MethodGet)
}

func (s *Server) createEdge(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	if err := params(r).err; err != nil {
		s.writeError(w, r, err)
		return
	}
	var req wire.LinkRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	src, err := requiredID("source_id", req.SourceID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	dst, err := requiredID("target_id", req.TargetID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := c.Link(r.Context(), postgram.LinkInput{SourceID: src, TargetID: dst, Relation: req.Relation,
		Confidence: req.Confidence, Metadata: req.Metadata})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusCreated, wire.EdgeResponse{Edge: e})
}

func requiredID(field, v string) (uuid.UUID, error) {
	if strings.TrimSpace(v) == "" {
		return uuid.Nil, invalid(field, "is required")
	}
	return postgram.ParseID(field, v)
}

func (s *Server) deleteEdge(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	id, err := pathID(r)
	if err == nil {
		err = params(r).err
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := c.Unlink(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, wire.DeleteResponse{ID: id, Deleted: true})
}

func (s *Server) entityEdges(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	id, err := pathID(r)
	p := params(r, "relation", "direction", "owner")
	opts := postgram.EdgesOptions{Relation: p.str("relation"), Direction: postgram.EdgeDirection(p.str("direction"))}
	owner := ownerParam(p)
	if err == nil {
		err = p.err
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if owner != "" {
		if _, err := recallOwned(r.Context(), c, id, owner); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	es, err := c.Edges(r.Context(), id, opts)
	if err == nil {
		es, err = edgesOwned(r.Context(), c, id, es, owner)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, wire.EdgeList{Edges: es})
}

func (s *Server) entityGraph(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	id, err := pathID(r)
	p := params(r, "depth", "relation_types", "min_confidence", "max_nodes", "include_archived", "owner")
	opts := postgram.ExpandOptions{
		Depth:           p.int("depth", 0),
		RelationTypes:   p.list("relation_types"),
		MinConfidence:   floatParam(p, "min_confidence", 0, 0, 1),
		MaxNodes:        p.int("max_nodes", 0),
		IncludeArchived: p.bool("include_archived", false),
	}
	owner := ownerParam(p)
	if err == nil {
		err = p.err
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if owner != "" {
		if _, err := recallOwned(r.Context(), c, id, owner); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	g, err := c.Expand(r.Context(), id, opts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	g = graphOwned(g, id, opts.Depth, owner)
	s.writeJSON(w, r, http.StatusOK, wire.Graph{Entities: g.Entities, Edges: g.Edges, Truncated: g.Truncated})
}

// floatParam returns a number parameter in [lo, hi], or def when absent.
func floatParam(p *queryParams, name string, def, lo, hi float64) float64 {
	v, ok := p.one(name)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || f < lo || f > hi {
		p.fail(invalid(name, fmt.Sprintf("must be a number between %g and %g, got %q", lo, hi, truncateName(v))))
		return def
	}
	return f
}
