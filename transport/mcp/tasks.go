package mcp

import (
	"context"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/wire"
)

// taskRow is a compact task: {id, status, content, context?, due_date?,
// tags?, version}.
type taskRow struct {
	ID      uuid.UUID       `json:"id"`
	Status  postgram.Status `json:"status"`
	Content string          `json:"content"`
	Context string          `json:"context,omitempty"`
	DueDate string          `json:"due_date,omitempty"`
	Tags    []string        `json:"tags,omitempty"`
	Version int64           `json:"version"`
}

// taskListCompact is {tasks:[row], total, limit, offset}.
type taskListCompact struct {
	Tasks  []taskRow `json:"tasks"`
	Total  int       `json:"total"`
	Limit  int       `json:"limit"`
	Offset int       `json:"offset"`
}

func metaString(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

var (
	taskStatusParam = param{Name: "status", Kind: kindString, Enum: strs(postgram.TaskStatuses),
		Description: "GTD status: inbox (default for new tasks: captured, not yet clarified), next (the next physical action), " +
			"waiting (delegated or blocked), scheduled (has a date), someday (maybe later) or done."}
	taskContextParam = param{Name: "context", Kind: kindString,
		Description: "GTD context: where or with what the task can be done, e.g. @focus-work, @phone, @errands. No spaces."}
	taskDueParam = param{Name: "due_date", Kind: kindString,
		Description: "Due date: 2026-12-01 or an RFC 3339 time such as 2026-12-01T09:00:00Z."}
)

func taskTools() []toolSpec {
	return []toolSpec{
		{
			Name:  "task_create",
			Title: "Create a task",
			Description: "Capture a GTD task (an entity of type task). Status defaults to inbox; give context and due_date when known. " +
				"Search or task_list first to avoid a duplicate. Returns {entity:{id, type, version, status, visibility, enrichment_status}}.",
			Params: []param{
				{Name: "content", Kind: kindString, Required: true, Description: "What to do, as a self-contained action (\"Call Ana about the Q3 budget\")."},
				taskContextParam, taskStatusParam, taskDueParam, tagsParam, visibilityParam, ownerParam, metadataParam(false),
			},
			Handler: taskCreateTool,
		},
		{
			Name:  "task_list",
			Title: "List tasks",
			Description: "List tasks, newest first, filtered by GTD status, context and due date. Returns compact rows " +
				"{tasks:[{id, status, content, context?, due_date?, tags?, version}], total, limit, offset}; content is a preview " +
				"(recall an id for the whole text). Archived tasks are left out; done tasks are included unless status filters them.",
			Params: []param{
				{Name: "status", Kind: kindStrings, Enum: strs(postgram.TaskStatuses),
					Description: "Only these statuses (one or more; a single string is accepted)."},
				{Name: "context", Kind: kindString, Description: "Only tasks in this GTD context, e.g. @focus-work."},
				{Name: "due_before", Kind: kindString, Description: "Only tasks due before this date or RFC 3339 time."},
				{Name: "due_after", Kind: kindString, Description: "Only tasks due after this date or RFC 3339 time."},
				{Name: "tags", Kind: kindStrings, Description: "Only tasks carrying every one of these tags."},
				{Name: "limit", Kind: kindInteger, Min: ptr(1), Description: "Page size (default 50, at most 500)."},
				{Name: "offset", Kind: kindInteger, Min: ptr(0), Description: "Tasks to skip (paging)."},
			},
			TOON:       true,
			ReadOnly:   true,
			Idempotent: true,
			Handler:    taskListTool,
		},
		{
			Name:  "task_update",
			Title: "Update a task",
			Description: "Change a task: status, context, due date, content or tags. Pass the version you last read; a stale one " +
				"fails with CONFLICT and details.current holds the task as stored now. An empty context or due_date removes it. " +
				"Returns {entity:{id, type, version, status, visibility, enrichment_status}}.",
			Params: []param{
				idParam,
				{Name: "version", Kind: kindInteger, Required: true, Min: ptr(1), Description: "The task's version as you read it."},
				{Name: "content", Kind: kindString, Description: "New text of the task."},
				taskContextParam, taskStatusParam, taskDueParam, tagsParam, visibilityParam, ownerParam, metadataParam(true),
			},
			Handler: taskUpdateTool,
		},
		{
			Name:  "task_complete",
			Title: "Complete a task",
			Description: "Mark a task done and record its completion time (metadata.completed_at). Pass the version you last " +
				"read; a stale one fails with CONFLICT (details.current) and changes nothing. Returns {entity:{id, type, version, status, visibility, enrichment_status}}.",
			Params: []param{
				idParam,
				{Name: "version", Kind: kindInteger, Required: true, Min: ptr(1), Description: "The task's version as you read it."},
			},
			Idempotent: true,
			Handler:    taskCompleteTool,
		},
	}
}

func taskCreateTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	var in postgram.TaskInput
	in.Content, _ = a.str("content")
	in.Context, _ = a.str("context")
	if v, ok := a.str("status"); ok {
		in.Status = postgram.Status(v)
	}
	in.DueDate, _ = a.str("due_date")
	in.Tags, _ = a.strings("tags")
	if v, ok := a.str("visibility"); ok {
		in.Visibility = postgram.Visibility(v)
	}
	in.Owner, _ = a.str("owner")
	in.Metadata, _ = a.object("metadata")
	e, err := c.CreateTask(ctx, in)
	if err != nil {
		return reply{}, err
	}
	return reply{Compact: ackOf(e), Full: wire.EntityResponse{Entity: e}}, nil
}

func taskListTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	var o postgram.TaskListOptions
	if v, ok := a.strings("status"); ok {
		for _, s := range v {
			o.Statuses = append(o.Statuses, postgram.Status(s))
		}
	}
	o.Context, _ = a.str("context")
	o.Tags, _ = a.strings("tags")
	due := func(name string, dst *time.Time) error {
		v, ok := a.str(name)
		if !ok || v == "" {
			return nil
		}
		t, err := postgram.ParseTaskTime(name, v)
		*dst = t
		return err
	}
	if err := due("due_before", &o.DueBefore); err != nil {
		return reply{}, err
	}
	if err := due("due_after", &o.DueAfter); err != nil {
		return reply{}, err
	}
	if v, ok := a.int("limit"); ok {
		o.Limit = clampInt(v)
	}
	if v, ok := a.int("offset"); ok {
		o.Offset = int(max(min(v, math.MaxInt32), math.MinInt32))
	}
	page, err := c.ListTasks(ctx, o)
	if err != nil {
		return reply{}, err
	}
	out := taskListCompact{Tasks: make([]taskRow, 0, len(page.Items)), Total: page.Total, Limit: page.Limit, Offset: page.Offset}
	for _, e := range page.Items {
		out.Tasks = append(out.Tasks, taskRow{ID: e.ID, Status: e.Status, Content: preview(e.Content),
			Context: metaString(e.Metadata, "context"), DueDate: metaString(e.Metadata, "due_date"), Tags: e.Tags, Version: e.Version})
	}
	return reply{Compact: out, Full: page}, nil
}

func taskUpdateTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	s, _ := a.str("id")
	id, err := postgram.ParseID("id", s)
	if err != nil {
		return reply{}, err
	}
	var in postgram.TaskUpdate
	in.Version, _ = a.int("version")
	if v, ok := a.str("content"); ok {
		in.Content = &v
	}
	if v, ok := a.str("context"); ok {
		in.Context = &v
	}
	if v, ok := a.str("status"); ok {
		st := postgram.Status(v)
		in.Status = &st
	}
	if v, ok := a.str("due_date"); ok {
		in.DueDate = &v
	}
	if v, ok := a.strings("tags"); ok {
		in.Tags = &v
	}
	if v, ok := a.str("visibility"); ok {
		vis := postgram.Visibility(v)
		in.Visibility = &vis
	}
	if v, ok := a.str("owner"); ok {
		in.Owner = &v
	}
	in.Metadata, _ = a.object("metadata")
	e, err := c.UpdateTask(ctx, id, in)
	if err != nil {
		return reply{}, err
	}
	return reply{Compact: ackOf(e), Full: wire.EntityResponse{Entity: e}}, nil
}

func taskCompleteTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	s, _ := a.str("id")
	id, err := postgram.ParseID("id", s)
	if err != nil {
		return reply{}, err
	}
	v, _ := a.int("version")
	e, err := c.CompleteTask(ctx, id, v)
	if err != nil {
		return reply{}, err
	}
	return reply{Compact: ackOf(e), Full: wire.EntityResponse{Entity: e}}, nil
}
