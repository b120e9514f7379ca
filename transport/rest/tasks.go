package rest

import (
	"net/http"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/wire"
)

func (s *Server) taskRoutes() {
	s.api.HandleFunc("/api/tasks", s.createTask).Methods(http.MethodPost)
	s.api.HandleFunc("/api/tasks", s.listTasks).Methods(http.MethodGet)
	s.api.HandleFunc("/api/tasks/{id}", s.updateTask).Methods(http.MethodPatch)
	s.api.HandleFunc("/api/tasks/{id}/complete", s.completeTask).Methods(http.MethodPost)
}

func (s *Server) createTask(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	var req wire.TaskRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := c.CreateTask(r.Context(), req.Input())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/entities/"+e.ID.String())
	s.writeJSON(w, r, http.StatusCreated, wire.EntityResponse{Entity: e})
}

// taskListParams are the query parameters of GET /api/tasks.
var taskListParams = []string{"status", "context", "due_before", "due_after", "tags", "limit", "offset", "include_archived"}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	p := params(r, taskListParams...)
	opts := postgram.TaskListOptions{
		Statuses: convert[postgram.Status](p.list("status")),
		Context:  p.str("context"),
		Tags:     p.list("tags"),
		Limit:    p.int("limit", 0),
		Offset:   p.int("offset", 0),

		IncludeArchived: p.bool("include_archived", false),
	}
	due := func(name string) time.Time {
		v := p.str(name)
		if v == "" || p.err != nil {
			return time.Time{}
		}
		t, err := postgram.ParseTaskTime(name, v)
		if err != nil {
			p.fail(err)
		}
		return t
	}
	opts.DueBefore, opts.DueAfter = due("due_before"), due("due_after")
	if p.err != nil {
		s.writeError(w, r, p.err)
		return
	}
	page, err := c.ListTasks(r.Context(), opts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, page)
}

func (s *Server) updateTask(w http.ResponseWriter, r *http.Request) {
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
	var req wire.TaskUpdateRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Version == nil {
		s.writeError(w, r, invalid("version", "is required: send the version you read (optimistic concurrency)"))
		return
	}
	in := req.Update(*req.Version)
	e, err := c.UpdateTask(r.Context(), id, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, wire.EntityResponse{Entity: e})
}

func (s *Server) completeTask(w http.ResponseWriter, r *http.Request) {
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
	var req wire.CompleteTaskRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Version == nil {
		s.writeError(w, r, invalid("version", "is required: send the version you read (optimistic concurrency)"))
		return
	}
	e, err := c.CompleteTask(r.Context(), id, *req.Version)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, wire.EntityResponse{Entity: e})
}
