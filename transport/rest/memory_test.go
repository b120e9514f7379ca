package rest_test

import (
	"net/http"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
)

func TestSessionContextAndGroom(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rw := []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}
	a := e.key(postgram.KeySpec{Name: "a", Scopes: rw, ClientID: "agent-a"})
	b := e.key(postgram.KeySpec{Name: "b", Scopes: rw, ClientID: "agent-b"})
	ent := e.do("POST", "/api/memory/session-context", a, map[string]any{
		"content": "resuming the okapi migration", "session_id": "s1", "agent_id": "claude", "topic": "okapi",
		"tags": []string{"wip"}, "promotable": false, "groom_after": "0d",
	}).want(http.StatusCreated).object()["entity"].(map[string]any)
	meta := ent["metadata"].(map[string]any)
	if meta["memory_role"] != "session_context" || meta["topic"] != "okapi" || meta["promotable"] != false || ent["type"] != "memory" {
		t.Fatalf("session context %v", ent)
	}
	id := ent["id"].(string)
	e.do("GET", "/api/entities/"+id, a, nil).want(http.StatusOK)
	e.do("GET", "/api/entities/"+id, b, nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")
	if l := e.do("GET", "/api/entities?memory_role=session_context", b, nil).want(http.StatusOK).object(); l["total"] != float64(0) {
		t.Fatalf("B lists A's context: %v", l)
	}
	if r := e.do("POST", "/api/search", b, map[string]any{"query": "okapi"}).want(http.StatusOK).object(); len(r["results"].([]any)) != 0 {
		t.Fatalf("B finds A's context: %v", r)
	}

	dry := e.do("POST", "/api/memory/session-context/groom", a, map[string]any{"older_than": "0d", "topic": "okapi"}).want(http.StatusOK).object()
	if dry["eligible_count"] != float64(1) || len(dry["eligible"].([]any)) != 1 || dry["dry_run"] != true || dry["archived"] != float64(0) {
		t.Fatalf("dry run %v", dry)
	}
	if other := e.do("POST", "/api/memory/session-context/groom", b, map[string]any{"older_than": "0d"}).want(http.StatusOK).object(); other["eligible_count"] != float64(0) {
		t.Fatalf("B grooms A's context: %v", other)
	}
	e.do("POST", "/api/memory/session-context/groom", a, map[string]any{"older_than": "7x"}).wantError(http.StatusBadRequest, apierror.Validation, "older_than", "")
	e.do("POST", "/api/memory/session-context/groom", a, map[string]any{"dry_run": false}).wantError(http.StatusBadRequest, apierror.Validation, "confirmed", "")
	done := e.do("POST", "/api/memory/session-context/groom", a, map[string]any{"dry_run": false, "confirmed": true, "older_than": "0d"}).want(http.StatusOK).object()
	if done["archived"] != float64(1) {
		t.Fatalf("archive %v", done)
	}
	if got := e.do("GET", "/api/entities/"+id, a, nil).want(http.StatusOK).object()["entity"].(map[string]any); got["status"] != "archived" {
		t.Fatalf("after groom %v", got)
	}
}
