package rest_test

import (
	"net/http"
	"testing"

	"github.com/postgram-go/postgram/transport/apierror"
)

func TestTasks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("POST", "/api/tasks", e.admin, map[string]any{
		"content": "set up monitoring", "context": "@focus-work", "due_date": "2026-12-01", "tags": []string{"ops"},
	}).want(http.StatusCreated)
	task := r.object()["entity"].(map[string]any)
	checkEntityShape(t, task)
	if task["type"] != "task" || task["status"] != "inbox" {
		t.Fatalf("created %v", task)
	}
	id := task["id"].(string)
	e.do("POST", "/api/tasks", e.admin, map[string]any{"content": "call Bob", "context": "@phone", "status": "next"}).want(http.StatusCreated)

	list := e.do("GET", "/api/tasks?context=@focus-work", e.admin, nil).want(http.StatusOK).object()
	if list["total"] != float64(1) || list["items"].([]any)[0].(map[string]any)["id"] != id {
		t.Fatalf("list by context %v", list)
	}
	list = e.do("GET", "/api/tasks?status=next,waiting&limit=10", e.admin, nil).want(http.StatusOK).object()
	if list["total"] != float64(1) || list["limit"] != float64(10) {
		t.Fatalf("list by status %v", list)
	}
	list = e.do("GET", "/api/tasks?due_before=2026-12-02", e.admin, nil).want(http.StatusOK).object()
	if list["total"] != float64(1) {
		t.Fatalf("list due before %v", list)
	}
	e.do("GET", "/api/tasks?due_before=soon", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "due_before", "")
	e.do("GET", "/api/tasks?state=next", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "state", "")

	up := e.do("PATCH", "/api/tasks/"+id, e.admin, map[string]any{"version": 1, "status": "waiting"}).want(http.StatusOK).object()["entity"].(map[string]any)
	if up["status"] != "waiting" || up["version"] != float64(2) {
		t.Fatalf("updated %v", up)
	}
	e.do("PATCH", "/api/tasks/"+id, e.admin, map[string]any{"status": "next"}).wantError(http.StatusBadRequest, apierror.Validation, "version", "")
	// Completing with a stale version: 409 with the current task.
	body := e.do("POST", "/api/tasks/"+id+"/complete", e.admin, map[string]any{"version": 1}).wantError(http.StatusConflict, apierror.Conflict, "", "")
	if cur, _ := body.Details["current"].(map[string]any); cur == nil || cur["version"] != float64(2) || cur["status"] != "waiting" {
		t.Fatalf("conflict details %v", body.Details)
	}
	done := e.do("POST", "/api/tasks/"+id+"/complete", e.admin, map[string]any{"version": 2}).want(http.StatusOK).object()["entity"].(map[string]any)
	if done["status"] != "done" || done["metadata"].(map[string]any)["completed_at"] == nil {
		t.Fatalf("completed %v", done)
	}
	e.do("POST", "/api/tasks", e.admin, map[string]any{"content": "x", "status": "active"}).wantError(http.StatusBadRequest, apierror.Validation, "status", "")
	e.do("POST", "/api/tasks", e.admin, map[string]any{"content": "x", "due_date": "2026-13-45"}).wantError(http.StatusBadRequest, apierror.Validation, "due_date", "")
}
