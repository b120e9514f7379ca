package mcp_test

import (
	"strings"
	"testing"
)

func TestTaskTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := connect(t, e.ts.URL, bearer(e.rwKey(t)))
	ack := ok(t, c, "task_create", map[string]any{"content": "set up monitoring", "context": "@focus-work", "due_date": "2026-12-01"})
	ent := ack["entity"].(map[string]any)
	if ent["type"] != "task" || ent["status"] != "inbox" || ent["version"] != float64(1) {
		t.Fatalf("task_create ack %v", ack)
	}
	id := ent["id"].(string)
	ok(t, c, "task_create", map[string]any{"content": "call Bob", "context": "@phone", "status": "next"})

	list := ok(t, c, "task_list", map[string]any{"context": "@focus-work"})
	rows := list["tasks"].([]any)
	if list["total"] != float64(1) || len(rows) != 1 {
		t.Fatalf("task_list %v", list)
	}
	row := rows[0].(map[string]any)
	if row["id"] != id || row["context"] != "@focus-work" || row["due_date"] != "2026-12-01T00:00:00Z" || row["status"] != "inbox" {
		t.Fatalf("task row %v", row)
	}
	// Stringly-typed status list and limit, as agents send them.
	if l := ok(t, c, "task_list", map[string]any{"status": "next", "limit": "5"}); l["total"] != float64(1) || l["limit"] != float64(5) {
		t.Fatalf("task_list status=next %v", l)
	}
	// TOON text.
	res, _ := call(t, c, "task_list", map[string]any{"toon": true})
	if txt := text(t, res); !strings.Contains(txt, "tasks[2]") {
		t.Fatalf("toon task_list %q", txt)
	}

	up := ok(t, c, "task_update", map[string]any{"id": id, "version": "1", "status": "waiting"})
	if up["entity"].(map[string]any)["version"] != float64(2) {
		t.Fatalf("task_update %v", up)
	}
	env := fail(t, c, "task_complete", map[string]any{"id": id, "version": 1}, "CONFLICT")
	if cur := env["details"].(map[string]any)["current"].(map[string]any); cur["version"] != float64(2) {
		t.Fatalf("conflict current %v", cur)
	}
	done := ok(t, c, "task_complete", map[string]any{"id": id, "version": 2, "full_response": true})
	de := done["entity"].(map[string]any)
	if de["status"] != "done" || de["metadata"].(map[string]any)["completed_at"] == nil {
		t.Fatalf("task_complete %v", done)
	}
	fail(t, c, "task_create", map[string]any{"content": "x", "due_date": "next week"}, "VALIDATION")
	fail(t, c, "task_list", map[string]any{"due_after": "7x"}, "VALIDATION")
}
