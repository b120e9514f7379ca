package rest

import (
	"net/http"
	"time"

	"github.com/postgram-go/postgram"
)

func (s *Server) taskRoutes() {
	s.api.HandleFunc("/api/tasks", s.createTask).Methods(http.MethodPost)
	s.api.HandleFunc("/api/tasks", s.listTasks).Methods(http.MethodGet)
	s.api.HandleFunc("/api/tasks/{id}", s.updateTask).Methods(http.MethodPatch)
	s.api.HandleFunc("/api/tasks/{id}/complete", s.completeTask).Methods(http.MethodPost)
}

// createTaskRequest is the body of POST /api/tasks.
type createTaskRequest struct {
	Content    string         `json:"content"`
	Context    string         `json:"context"`
	Status     string         `json:"status"`
	DueDate    string         `json:"due_date"`
	Tags       []string       `json:"tags"`
	Visibility string         `json:"visibility"`
	Owner      string         `json:"owner"`
	Metadata   map[string]any `json:"metadata"`
}

func (s *Server) createTask(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	var req createTaskRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := c.CreateTask(r.Context(), postgram.TaskInput{Content: req.Content, Context: req.Context,
		Status: postgram.Status(req.Status), DueDate: req.DueDate, Tags: req.Tags,
		Visibility: postgram.Visibility(req.Visibility), Owner: req.Owner, Metadata: req.Metadata})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/entities/"+e.ID.String())
	s.writeJSON(w, r, http.StatusCreated, entityResponse{Entity: e})
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

// updateTaskRequest is the body of PATCH /api/tasks/{id}. Absent (or
// null) fields are left unchanged; an empty context or due_date removes it.
type updateTaskRequest struct {
	Version    *int64         `json:"version"`
	Content    *string        `json:"content"`
	Context    *string        `json:"context"`
	Status     *string        `json:"status"`
	DueDate    *string        `json:"due_date"`
	Tags       *[]string      `json:"tags"`
	Visibility *string        `json:"visibility"`
	Owner      *string        `json:"owner"`
	Metadata   map[string]any `json:"metadata"`
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
	var req updateTaskRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Version == nil {
		s.writeError(w, r, invalid("version", "is required: send the version you read (optimistic concurrency)"))
		return
	}
	in := postgram.TaskUpdate{Version: *req.Version, Content: req.Content, Context: req.Context, DueDate: req.DueDate,
		Tags: req.Tags, Owner: req.Owner, Metadata: req.Metadata}
	if req.Status != nil {
		st := postgram.Status(*req.Status)
		in.Status = &st
	}
	if req.Visibility != nil {
		v := postgram.Visibility(*req.Visibility)
		in.Visibility = &v
	}
	e, err := c.UpdateTask(r.Context(), id, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, entityResponse{Entity: e})
}

// completeTaskRequest is the body of POST /api/tasks/{id}/complete.
type completeTaskRequest struct {
	Version *int64 `json:"version"`
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
	var req completeTaskRequest
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
	s.writeJSON(w, r, http.StatusOK, entityResponse{Entity: e})
}
