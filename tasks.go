package postgram

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/validate"
)

// Tasks are entities of type task with GTD fields: status (inbox, next,
// waiting, scheduled, someday, done), a context such as "@focus-work"
// (metadata.context), a due date (metadata.due_date) and, once done, a
// completion time (metadata.completed_at). Timestamps in metadata are
// fixed-width UTC RFC 3339 text ("2026-12-01T09:00:00Z"), so they compare
// correctly as text on every backend.

// TaskStatuses lists the statuses a task may have (archived is reached by
// deleting it).
var TaskStatuses = []Status{StatusInbox, StatusNext, StatusWaiting, StatusScheduled, StatusSomeday, StatusDone}

// Task metadata keys.
const (
	metaContext     = "context"
	metaDueDate     = "due_date"
	metaCompletedAt = "completed_at"
)

// metaTimeLayout is the fixed-width UTC form of timestamps kept in metadata.
const metaTimeLayout = "2006-01-02T15:04:05Z"

func formatMetaTime(t time.Time) string { return t.UTC().Format(metaTimeLayout) }

// parseDue accepts a date (2026-12-01, meaning its start in UTC) or an RFC
// 3339 time and returns the metadata form.
func parseDue(field, s string) (string, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return formatMetaTime(t), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return formatMetaTime(t), nil
	}
	return "", validate.Invalid(field, "%q is not a date (2026-12-01) or an RFC 3339 time (2026-12-01T09:00:00Z)", validate.Truncate(s, 40))
}

// ParseTaskTime parses a due-date bound as the task API accepts it (a date
// or an RFC 3339 time), naming field in the error. Adapters use it for
// query parameters such as due_before.
func ParseTaskTime(field, s string) (time.Time, error) {
	d, err := parseDue(field, s)
	if err != nil {
		return time.Time{}, err
	}
	return time.Parse(metaTimeLayout, d)
}

func validateTaskStatus(field string, s Status) error {
	for _, k := range TaskStatuses {
		if s == k {
			return nil
		}
	}
	return validate.Invalid(field, "%q is not a task status: inbox, next, waiting, scheduled, someday or done", validate.Truncate(string(s), 40))
}

func validateContext(field, s string) error {
	if err := validate.Short(field, s, MaxContextLen); err != nil {
		return err
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return validate.Invalid(field, "%q must not contain whitespace (e.g. @focus-work)", validate.Truncate(s, 40))
	}
	return nil
}

// TaskInput creates a task. Status defaults to inbox.
type TaskInput struct {
	Content    string         `json:"content"`
	Context    string         `json:"context,omitempty"`
	Status     Status         `json:"status,omitempty"`
	DueDate    string         `json:"due_date,omitempty"` // 2026-12-01 or RFC 3339
	Tags       []string       `json:"tags,omitempty"`
	Visibility Visibility     `json:"visibility,omitempty"`
	Owner      string         `json:"owner,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// CreateTask stores a new task.
func (c *Client) CreateTask(ctx context.Context, in TaskInput) (*Entity, error) {
	if in.Status == "" {
		in.Status = StatusInbox
	}
	if err := validateTaskStatus("status", in.Status); err != nil {
		return nil, err
	}
	meta := driver.CloneMetadata(in.Metadata)
	if meta == nil {
		meta = map[string]any{}
	}
	if in.Context != "" {
		if err := validateContext("context", in.Context); err != nil {
			return nil, err
		}
		meta[metaContext] = in.Context
	}
	if in.DueDate != "" {
		d, err := parseDue("due_date", in.DueDate)
		if err != nil {
			return nil, err
		}
		meta[metaDueDate] = d
	}
	if in.Status == StatusDone {
		meta[metaCompletedAt] = formatMetaTime(c.now())
	}
	e, err := c.Store(ctx, StoreInput{Type: TypeTask, Content: in.Content, Status: in.Status, Tags: in.Tags,
		Visibility: in.Visibility, Owner: in.Owner, Metadata: meta, SkipExtraction: true})
	if err != nil {
		return nil, fmt.Errorf("create task: %w", err)
	}
	return e, nil
}

// TaskListOptions filters and pages ListTasks.
type TaskListOptions struct {
	// Statuses admits only these statuses; empty means every status but
	// archived (done included).
	Statuses []Status
	Context  string
	// DueBefore / DueAfter bound the due date (tasks without one are left
	// out when either is set).
	DueBefore time.Time
	DueAfter  time.Time
	Tags      []string
	// IncludeArchived admits archived tasks too (a status filter still
	// applies).
	IncludeArchived bool
	// Limit defaults to DefaultListLimit and may not exceed MaxListLimit.
	Limit  int
	Offset int
}

// ListTasks returns tasks matching opts, newest first, with the total count.
func (c *Client) ListTasks(ctx context.Context, opts TaskListOptions) (*ListPage, error) {
	if err := c.principal.need(ScopeRead, "list tasks"); err != nil {
		return nil, err
	}
	if opts.Limit < 0 || opts.Limit > MaxListLimit {
		return nil, validate.Invalid("limit", "must be between 1 and %d", MaxListLimit)
	}
	if opts.Limit == 0 {
		opts.Limit = DefaultListLimit
	}
	if opts.Offset < 0 || opts.Offset > 1_000_000 {
		return nil, validate.Invalid("offset", "must be between 0 and 1000000")
	}
	for i, s := range opts.Statuses {
		f := fmt.Sprintf("status[%d]", i)
		if len(opts.Statuses) == 1 {
			f = "status"
		}
		if s == StatusArchived {
			continue
		}
		if err := validateTaskStatus(f, s); err != nil {
			return nil, err
		}
	}
	f, err := buildFilter([]EntityType{TypeTask}, opts.Statuses, nil, "", opts.Tags, "", opts.IncludeArchived)
	if err != nil {
		return nil, err
	}
	var q driver.FindQuery
	if opts.Context != "" {
		if err := validateContext("context", opts.Context); err != nil {
			return nil, err
		}
		q.Meta = append(q.Meta, driver.MetaCond{Key: metaContext, Op: driver.MetaEq, Value: opts.Context})
	}
	if !opts.DueBefore.IsZero() {
		q.Meta = append(q.Meta, driver.MetaCond{Key: metaDueDate, Op: driver.MetaLT, Value: formatMetaTime(opts.DueBefore)})
	}
	if !opts.DueAfter.IsZero() {
		q.Meta = append(q.Meta, driver.MetaCond{Key: metaDueDate, Op: driver.MetaGT, Value: formatMetaTime(opts.DueAfter)})
	}
	page := &ListPage{Items: []*Entity{}, Limit: opts.Limit, Offset: opts.Offset}
	f, ok := c.principal.restrict(f)
	if !ok {
		return page, nil
	}
	items, total, err := c.store.FindEntities(ctx, c.ws, f, q, opts.Limit, opts.Offset)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	if b := c.resultBudget(); b > 0 {
		var size int64
		for i, e := range items {
			if size += int64(len(e.Content)); size > b {
				return nil, c.tooLarge("limit", i)
			}
		}
	}
	if items != nil {
		page.Items = items
	}
	page.Total = total
	return page, nil
}

// TaskUpdate is a partial task update; nil fields are left unchanged. An
// empty Context or DueDate removes it. Version must be the version read.
type TaskUpdate struct {
	Version    int64          `json:"version"`
	Content    *string        `json:"content,omitempty"`
	Context    *string        `json:"context,omitempty"`
	Status     *Status        `json:"status,omitempty"`
	DueDate    *string        `json:"due_date,omitempty"`
	Tags       *[]string      `json:"tags,omitempty"`
	Visibility *Visibility    `json:"visibility,omitempty"`
	Owner      *string        `json:"owner,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// UpdateTask changes a task. Moving it to done records completed_at;
// moving it out of done clears it. A stale version is a *ConflictError.
func (c *Client) UpdateTask(ctx context.Context, id uuid.UUID, in TaskUpdate) (*Entity, error) {
	if err := c.principal.need(ScopeWrite, "update task"); err != nil {
		return nil, err
	}
	cur, err := c.task(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("update task: %w", err)
	}
	up := UpdateInput{Version: in.Version, Content: in.Content, Tags: in.Tags, Visibility: in.Visibility, Owner: in.Owner}
	meta := driver.CloneMetadata(in.Metadata)
	if meta == nil {
		meta = map[string]any{}
	}
	if in.Context != nil {
		if *in.Context == "" {
			meta[metaContext] = nil
		} else {
			if err := validateContext("context", *in.Context); err != nil {
				return nil, err
			}
			meta[metaContext] = *in.Context
		}
	}
	if in.DueDate != nil {
		if *in.DueDate == "" {
			meta[metaDueDate] = nil
		} else {
			d, err := parseDue("due_date", *in.DueDate)
			if err != nil {
				return nil, err
			}
			meta[metaDueDate] = d
		}
	}
	if in.Status != nil {
		if err := validateTaskStatus("status", *in.Status); err != nil {
			return nil, err
		}
		up.Status = in.Status
		switch {
		case *in.Status == StatusDone && cur.Status != StatusDone:
			meta[metaCompletedAt] = formatMetaTime(c.now())
		case *in.Status != StatusDone:
			meta[metaCompletedAt] = nil
		}
	}
	if len(meta) > 0 {
		up.Metadata = meta
	}
	e, err := c.Update(ctx, id, up)
	if err != nil {
		return nil, fmt.Errorf("update task %s: %w", id, err)
	}
	return e, nil
}

// CompleteTask marks a task done and records metadata.completed_at. version
// must be the version read; a stale one is a *ConflictError and changes
// nothing.
func (c *Client) CompleteTask(ctx context.Context, id uuid.UUID, version int64) (*Entity, error) {
	done := StatusDone
	return c.UpdateTask(ctx, id, TaskUpdate{Version: version, Status: &done})
}

// task loads a task the principal may see; another type is not found.
func (c *Client) task(ctx context.Context, id uuid.UUID) (*Entity, error) {
	e, err := c.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if e.Type != TypeTask {
		return nil, fmt.Errorf("entity %s is a %s, not a task: %w", id, e.Type, ErrNotFound)
	}
	return e, nil
}
