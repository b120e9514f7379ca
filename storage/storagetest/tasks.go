package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
)

func taskIDs(p *postgram.ListPage) []uuid.UUID {
	out := make([]uuid.UUID, len(p.Items))
	for i, e := range p.Items {
		out[i] = e.ID
	}
	return out
}

func sameIDs(got []uuid.UUID, want ...uuid.UUID) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func testTasks(t *testing.T, open Opener) {
	e := newEnv(t, open)
	c := e.c
	mk := func(in postgram.TaskInput) *postgram.Entity {
		t.Helper()
		task, err := c.CreateTask(e.ctx, in)
		if err != nil {
			t.Fatalf("CreateTask(%q): %v", in.Content, err)
		}
		return task
	}
	a := mk(postgram.TaskInput{Content: "set up monitoring", Context: "@focus-work", DueDate: "2026-12-01", Tags: []string{"ops"}})
	if a.Type != postgram.TypeTask || a.Status != postgram.StatusInbox {
		t.Fatalf("new task: type %s status %s, want task inbox", a.Type, a.Status)
	}
	if a.Metadata["context"] != "@focus-work" || a.Metadata["due_date"] != "2026-12-01T00:00:00Z" {
		t.Fatalf("new task metadata = %v", a.Metadata)
	}
	b := mk(postgram.TaskInput{Content: "call the plumber", Context: "@phone", Status: postgram.StatusNext, DueDate: "2026-11-20T15:30:00+01:00"})
	d := mk(postgram.TaskInput{Content: "write the report", Context: "@focus-work", Status: postgram.StatusNext})
	f := mk(postgram.TaskInput{Content: "learn the cello", Status: postgram.StatusSomeday})
	// A memory is not a task.
	mem := e.store1(postgram.StoreInput{Content: "not a task @focus-work"})

	list := func(o postgram.TaskListOptions) []uuid.UUID {
		t.Helper()
		p, err := c.ListTasks(e.ctx, o)
		if err != nil {
			t.Fatalf("ListTasks(%+v): %v", o, err)
		}
		return taskIDs(p)
	}
	if got := list(postgram.TaskListOptions{}); !sameIDs(got, f.ID, d.ID, b.ID, a.ID) {
		t.Fatalf("all tasks = %v", got)
	}
	if got := list(postgram.TaskListOptions{Context: "@focus-work"}); !sameIDs(got, d.ID, a.ID) {
		t.Fatalf("@focus-work = %v", got)
	}
	if got := list(postgram.TaskListOptions{Statuses: []postgram.Status{postgram.StatusNext}}); !sameIDs(got, d.ID, b.ID) {
		t.Fatalf("next = %v", got)
	}
	if got := list(postgram.TaskListOptions{Statuses: []postgram.Status{postgram.StatusNext}, Context: "@phone"}); !sameIDs(got, b.ID) {
		t.Fatalf("next @phone = %v", got)
	}
	if got := list(postgram.TaskListOptions{DueBefore: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}); !sameIDs(got, b.ID) {
		t.Fatalf("due before 11-25 = %v", got)
	}
	if got := list(postgram.TaskListOptions{DueAfter: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}); !sameIDs(got, a.ID) {
		t.Fatalf("due after 11-25 = %v", got)
	}
	p, err := c.ListTasks(e.ctx, postgram.TaskListOptions{Limit: 2, Offset: 1})
	if err != nil || !sameIDs(taskIDs(p), d.ID, b.ID) || p.Total != 4 {
		t.Fatalf("page 2 = %v total %d, %v", taskIDs(p), p.Total, err)
	}
	if got := list(postgram.TaskListOptions{Tags: []string{"ops"}}); !sameIDs(got, a.ID) {
		t.Fatalf("tag ops = %v", got)
	}

	// Update with the version read; a stale version is a conflict.
	waiting := postgram.StatusWaiting
	ctxPhone := "@phone"
	a2, err := c.UpdateTask(e.ctx, a.ID, postgram.TaskUpdate{Version: a.Version, Status: &waiting, Context: &ctxPhone})
	if err != nil {
		t.Fatalf("UpdateTask: %v", err)
	}
	if a2.Status != postgram.StatusWaiting || a2.Metadata["context"] != "@phone" || a2.Version != a.Version+1 {
		t.Fatalf("updated = %s %v v%d", a2.Status, a2.Metadata, a2.Version)
	}
	if a2.Metadata["due_date"] != "2026-12-01T00:00:00Z" {
		t.Fatalf("update lost the due date: %v", a2.Metadata)
	}
	_, err = c.UpdateTask(e.ctx, a.ID, postgram.TaskUpdate{Version: a.Version, Status: &waiting})
	var ce *postgram.ConflictError
	if !errors.As(err, &ce) || ce.Current == nil || ce.Current.Version != a2.Version {
		t.Fatalf("stale update: %v", err)
	}

	// Completing with a stale version changes nothing.
	if _, err := c.CompleteTask(e.ctx, a.ID, a.Version); !errors.Is(err, postgram.ErrConflict) {
		t.Fatalf("stale complete: %v", err)
	}
	if cur, _ := c.Recall(e.ctx, a.ID); cur.Status != postgram.StatusWaiting || cur.Metadata["completed_at"] != nil {
		t.Fatalf("stale complete changed the task: %s %v", cur.Status, cur.Metadata)
	}
	done, err := c.CompleteTask(e.ctx, a.ID, a2.Version)
	if err != nil {
		t.Fatalf("CompleteTask: %v", err)
	}
	at, _ := done.Metadata["completed_at"].(string)
	if done.Status != postgram.StatusDone || len(at) != len("2026-12-01T00:00:00Z") {
		t.Fatalf("completed = %s, completed_at %q", done.Status, at)
	}
	if got := list(postgram.TaskListOptions{Statuses: []postgram.Status{postgram.StatusDone}}); !sameIDs(got, a.ID) {
		t.Fatalf("done = %v", got)
	}
	// Reopening clears completed_at.
	next := postgram.StatusNext
	re, err := c.UpdateTask(e.ctx, a.ID, postgram.TaskUpdate{Version: done.Version, Status: &next})
	if err != nil || re.Metadata["completed_at"] != nil {
		t.Fatalf("reopen: %v %v", re, err)
	}

	// Bad input names the field.
	bad := postgram.Status("active")
	cases := []struct {
		name  string
		err   error
		field string
	}{
		{"empty content", func() error { _, err := c.CreateTask(e.ctx, postgram.TaskInput{}); return err }(), "content"},
		{"bad status", func() error {
			_, err := c.CreateTask(e.ctx, postgram.TaskInput{Content: "x", Status: "active"})
			return err
		}(), "status"},
		{"bad due", func() error {
			_, err := c.CreateTask(e.ctx, postgram.TaskInput{Content: "x", DueDate: "tomorrow"})
			return err
		}(), "due_date"},
		{"bad context", func() error {
			_, err := c.CreateTask(e.ctx, postgram.TaskInput{Content: "x", Context: "focus work"})
			return err
		}(), "context"},
		{"bad update status", func() error {
			_, err := c.UpdateTask(e.ctx, b.ID, postgram.TaskUpdate{Version: b.Version, Status: &bad})
			return err
		}(), "status"},
		{"list bad status", func() error {
			_, err := c.ListTasks(e.ctx, postgram.TaskListOptions{Statuses: []postgram.Status{"active"}})
			return err
		}(), "status"},
	}
	for _, tc := range cases {
		wantErr(t, tc.err, postgram.ErrInvalidArgument, tc.field)
	}
	// A memory cannot be completed as a task.
	if _, err := c.CompleteTask(e.ctx, mem.ID, mem.Version); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("complete a memory: %v", err)
	}
	// Archived (deleted) tasks leave the default list.
	if _, err := c.Delete(e.ctx, f.ID); err != nil {
		t.Fatal(err)
	}
	if got := list(postgram.TaskListOptions{}); !sameIDs(got, d.ID, b.ID, a.ID) {
		t.Fatalf("after delete = %v", got)
	}
}
