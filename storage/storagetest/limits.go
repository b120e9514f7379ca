package storagetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
)

// testResultBudget: a list page, a task list or a graph expansion whose
// contents exceed Config.MaxResultBytes is refused with a validation error
// on the parameter that pages it, saying how many items fit; a page that
// fits is answered.
func testResultBudget(t *testing.T, open Opener) {
	e := newEnv(t, open, func(c *postgram.Config) { c.MaxResultBytes = 250_000 })
	big := func(i int) string { return fmt.Sprintf("bulky entity %d ", i) + strings.Repeat("x", 100_000) }
	var ids []*postgram.Entity
	for i := range 5 {
		ids = append(ids, e.store1(postgram.StoreInput{Content: big(i)}))
	}
	_, err := e.c.List(e.ctx, postgram.ListOptions{Limit: 5})
	wantErr(t, err, postgram.ErrInvalidArgument, "limit")
	if !strings.Contains(err.Error(), "only the first 2 items fit") || !strings.Contains(err.Error(), "limit=2") {
		t.Fatalf("the error must say how many fit: %v", err)
	}
	page, err := e.c.List(e.ctx, postgram.ListOptions{Limit: 2, Offset: 2})
	if err != nil || len(page.Items) != 2 || page.Total != 5 {
		t.Fatalf("a page that fits: %v %+v", err, page)
	}

	for i := 1; i < 5; i++ {
		if _, err := e.c.Link(e.ctx, postgram.LinkInput{SourceID: ids[0].ID, TargetID: ids[i].ID, Relation: "related_to"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = e.c.Expand(e.ctx, ids[0].ID, postgram.ExpandOptions{})
	wantErr(t, err, postgram.ErrInvalidArgument, "max_nodes")
	if !strings.Contains(err.Error(), "only the first 2 items fit") {
		t.Fatalf("expand: %v", err)
	}
	g, err := e.c.Expand(e.ctx, ids[0].ID, postgram.ExpandOptions{MaxNodes: 2})
	if err != nil || len(g.Entities) != 2 {
		t.Fatalf("an expansion that fits: %v", err)
	}

	for i := range 3 {
		if _, err := e.c.CreateTask(e.ctx, postgram.TaskInput{Content: big(10 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = e.c.ListTasks(e.ctx, postgram.TaskListOptions{Limit: 3})
	wantErr(t, err, postgram.ErrInvalidArgument, "limit")

	unbounded := e.client(func(c *postgram.Config) { c.MaxResultBytes = -1 })
	if page, err := unbounded.List(e.ctx, postgram.ListOptions{Limit: 10}); err != nil || len(page.Items) != 8 {
		t.Fatalf("without a budget: %v", err)
	}
}
