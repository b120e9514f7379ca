package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
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

// --- memory -----------------------------------------------------------

// SessionContextRequest is the body of POST /api/memory/session-context.
type SessionContextRequest struct {
	Content    string   `json:"content"`
	Visibility string   `json:"visibility,omitempty"`
	SessionID  string   `json:"session_id,omitempty"`
	AgentID    string   `json:"agent_id,omitempty"`
	Topic      string   `json:"topic,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	Promotable *bool    `json:"promotable,omitempty"`
	GroomAfter string   `json:"groom_after,omitempty"`
	ExpiresAt  string   `json:"expires_at,omitempty"`
}

// GroomRequest is the body of POST /api/memory/session-context/groom.
type GroomRequest struct {
	DryRun    bool     `json:"dry_run"`
	Confirmed bool     `json:"confirmed,omitempty"`
	OlderThan string   `json:"older_than,omitempty"`
	Limit     int      `json:"limit,omitempty"`
	Topic     string   `json:"topic,omitempty"`
	SessionID string   `json:"session_id,omitempty"`
	Tags      []string `json:"tags,omitempty"`
}

// GroomItem is one groomed (or eligible) memory.
type GroomItem struct {
	ID        string    `json:"id"`
	Topic     string    `json:"topic,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
	Preview   string    `json:"preview"`
	Action    string    `json:"action"`
	Error     string    `json:"error,omitempty"`
}

// GroomResponse is the answer of the groom route.
type GroomResponse struct {
	Mode     string      `json:"mode"`
	DryRun   bool        `json:"dry_run"`
	Eligible int         `json:"eligible_count"`
	Archived int         `json:"archived"`
	Failed   int         `json:"failed"`
	Items    []GroomItem `json:"items"`
}

// StoreSessionContext stores session context (POST /api/memory/session-context).
func (c *Client) StoreSessionContext(ctx context.Context, in SessionContextRequest) (*Entity, []byte, error) {
	return c.entity(ctx, http.MethodPost, "/api/memory/session-context", in)
}

// GroomSessionContext grooms the caller's session context.
func (c *Client) GroomSessionContext(ctx context.Context, in GroomRequest) (*GroomResponse, []byte, error) {
	var out GroomResponse
	raw, err := c.do(ctx, http.MethodPost, "/api/memory/session-context/groom", nil, in, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}
