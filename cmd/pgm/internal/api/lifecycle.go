package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/wire"
)

// --- tasks ------------------------------------------------------------

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
func (c *Client) CreateTask(ctx context.Context, in wire.TaskRequest) (*postgram.Entity, []byte, error) {
	return c.entity(ctx, http.MethodPost, "/api/tasks", in)
}

// UpdateTask changes a task (PATCH /api/tasks/{id}).
func (c *Client) UpdateTask(ctx context.Context, id string, in wire.TaskUpdateRequest) (*postgram.Entity, []byte, error) {
	return c.entity(ctx, http.MethodPatch, taskPath(id), in)
}

// CompleteTask completes a task (POST /api/tasks/{id}/complete).
func (c *Client) CompleteTask(ctx context.Context, id string, version int64) (*postgram.Entity, []byte, error) {
	return c.entity(ctx, http.MethodPost, taskPath(id)+"/complete", wire.CompleteTaskRequest{Version: &version})
}

// ListTasks pages through tasks (GET /api/tasks).
func (c *Client) ListTasks(ctx context.Context, q TaskQuery) (*wire.EntityList, []byte, error) {
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
	var out wire.EntityList
	raw, err := c.do(ctx, http.MethodGet, "/api/tasks", v, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// --- memory -----------------------------------------------------------

// StoreSessionContext stores session context (POST /api/memory/session-context).
func (c *Client) StoreSessionContext(ctx context.Context, in wire.SessionContextRequest) (*postgram.Entity, []byte, error) {
	return c.entity(ctx, http.MethodPost, "/api/memory/session-context", in)
}

// GroomSessionContext grooms the caller's session context.
func (c *Client) GroomSessionContext(ctx context.Context, in wire.GroomRequest) (*wire.GroomResponse, []byte, error) {
	var out wire.GroomResponse
	raw, err := c.do(ctx, http.MethodPost, "/api/memory/session-context/groom", nil, in, &out)
	if err != nil {
		return nil, nil, err
	}
	if out.GroomResult == nil { // a server that sends only the reference fields
		out.GroomResult = &postgram.GroomResult{DryRun: out.DryRunCamel, Eligible: len(out.Eligible)}
		out.EligibleCount = len(out.Eligible)
	}
	return &out, raw, nil
}
