package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// --- tasks ------------------------------------------------------------

// TaskRequest is the body of POST /api/tasks.
type TaskRequest struct {
	Content    string   `json:"content"`
	Context    string   `json:"context,omitempty"`
	Status     string   `json:"status,omitempty"`
	DueDate    string   `json:"due_date,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	Visibility string   `json:"visibility,omitempty"`
}

// TaskUpdateRequest is the body of PATCH /api/tasks/{id}.
type TaskUpdateRequest struct {
	Version int64     `json:"version"`
	Content *string   `json:"content,omitempty"`
	Context *string   `json:"context,omitempty"`
	Status  *string   `json:"status,omitempty"`
	DueDate *string   `json:"due_date,omitempty"`
	Tags    *[]string `json:"tags,omitempty"`
}

// TaskQuery holds the filters of GET /api/tasks.
type TaskQuery struct {
	Status    []string
	Context   string
	DueBefore string
	DueAfter  string
	Tags      []string
	Limit     int
	Offset    int
}

func taskPath(id string) string { return "/api/tasks/" + url.PathEscape(id) }

// CreateTask creates a task (POST /api/tasks).
func (c *Client) CreateTask(ctx context.Context, in TaskRequest) (*Entity, []byte, error) {
	return c.entity(ctx, http.MethodPost, "/api/tasks", in)
}

// UpdateTask changes a task (PATCH /api/tasks/{id}).
func (c *Client) UpdateTask(ctx context.Context, id string, in TaskUpdateRequest) (*Entity, []byte, error) {
	return c.entity(ctx, http.MethodPatch, taskPath(id), in)
}

// CompleteTask completes a task (POST /api/tasks/{id}/complete).
func (c *Client) CompleteTask(ctx context.Context, id string, version int64) (*Entity, []byte, error) {
	return c.entity(ctx, http.MethodPost, taskPath(id)+"/complete", map[string]int64{"version": version})
}

// ListTasks pages through tasks (GET /api/tasks).
func (c *Client) ListTasks(ctx context.Context, q TaskQuery) (*ListResponse, []byte, error) {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("status", strings.Join(q.Status, ","))
	set("context", q.Context)
	set("due_before", q.DueBefore)
	set("due_after", q.DueAfter)
	set("tags", strings.Join(q.Tags, ","))
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	var out ListResponse
	raw, err := c.do(ctx, http.MethodGet, "/api/tasks", v, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}
