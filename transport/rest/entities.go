package rest

import (
	"net/http"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/wire"
)

func (s *Server) entityRoutes() {
	s.api.HandleFunc("/api/entities", s.createEntity).Methods(http.MethodPost)
	s.api.HandleFunc("/api/entities", s.listEntities).Methods(http.MethodGet)
	s.api.HandleFunc("/api/entities/bulk/archive", s.bulkArchive).Methods(http.MethodPost)
	s.api.HandleFunc("/api/entities/{id}", s.getEntity).Methods(http.MethodGet)
	s.api.HandleFunc("/api/entities/{id}", s.updateEntity).Methods(http.MethodPatch)
	s.api.HandleFunc("/api/entities/{id}", s.deleteEntity).Methods(http.MethodDelete)
}

// client returns the authenticated client view of the request. Handlers
// call only it, so the principal's limits apply to everything they do.
func (s *Server) client(w http.ResponseWriter, r *http.Request) *postgram.Client {
	c := ClientFrom(r.Context())
	if c == nil {
		s.writeError(w, r, errNoClient)
		return nil
	}
	return c
}

type noClientError struct{}

func (noClientError) Error() string { return "rest: handler reached without an authenticated client" }

var errNoClient error = noClientError{}

func (s *Server) createEntity(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	var req wire.StoreRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := c.Store(r.Context(), req.Input())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/entities/"+e.ID.String())
	s.writeJSON(w, r, http.StatusCreated, wire.EntityResponse{Entity: e})
}

func (s *Server) getEntity(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	id, err := pathID(r)
	p := params(r, "owner")
	owner := ownerParam(p)
	if err == nil {
		err = p.err
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := recallOwned(r.Context(), c, id, owner)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, wire.EntityResponse{Entity: e})
}

func (s *Server) updateEntity(w http.ResponseWriter, r *http.Request) {
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
	var req wire.UpdateRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Version == nil {
		s.writeError(w, r, invalid("version", "is required: send the version you read (optimistic concurrency)"))
		return
	}
	in := req.Update(*req.Version)
	e, err := c.Update(r.Context(), id, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, wire.EntityResponse{Entity: e})
}

func (s *Server) deleteEntity(w http.ResponseWriter, r *http.Request) {
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
	e, err := c.Delete(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, wire.DeleteResponse{ID: e.ID, Deleted: true})
}

// listParams are the query parameters of GET /api/entities.
var listParams = []string{"type", "status", "visibility", "owner", "memory_role", "tags", "limit", "offset", "include_archived"}

func (s *Server) listEntities(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	p := params(r, listParams...)
	opts := postgram.ListOptions{
		Types:           convert[postgram.EntityType](p.list("type")),
		Statuses:        convert[postgram.Status](p.list("status")),
		Visibilities:    convert[postgram.Visibility](p.list("visibility")),
		Owner:           p.str("owner"),
		MemoryRole:      postgram.MemoryRole(p.str("memory_role")),
		Tags:            p.list("tags"),
		Limit:           p.int("limit", 0),
		Offset:          p.int("offset", 0),
		IncludeArchived: p.bool("include_archived", false),
	}
	if p.err != nil {
		s.writeError(w, r, p.err)
		return
	}
	page, err := c.List(r.Context(), opts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, page)
}

func (s *Server) bulkArchive(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	if err := params(r).err; err != nil {
		s.writeError(w, r, err)
		return
	}
	var req wire.BulkArchiveRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	results, err := c.BulkArchive(r.Context(), req.IDs)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := wire.BulkArchiveResponse{Archived: []wire.BulkArchived{}, Failed: []wire.BulkFailed{}}
	for _, res := range results {
		if res.Error == nil {
			resp.Archived = append(resp.Archived, wire.BulkArchived{ID: res.ID})
			continue
		}
		env := apierror.From(res.Error)
		if env.Error.Code == apierror.Internal {
			s.log.Error("bulk archive: internal error", "request_id", RequestIDFrom(r.Context()), "id", res.ID, "err", res.Error)
		}
		resp.Failed = append(resp.Failed, wire.BulkFailed{ID: res.ID, Code: env.Error.Code, Message: env.Error.Message})
	}
	s.writeJSON(w, r, http.StatusOK, resp)
}
