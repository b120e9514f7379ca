package mcp_test

import (
	"testing"

	"github.com/postgram-go/postgram"
)

func TestSessionContextTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rw := []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}
	a := connect(t, e.ts.URL, bearer(e.key(t, postgram.KeySpec{Name: "a", Scopes: rw, ClientID: "agent-a"})))
	b := connect(t, e.ts.URL, bearer(e.key(t, postgram.KeySpec{Name: "b", Scopes: rw, ClientID: "agent-b"})))
	ack := ok(t, a, "store_session_context", map[string]any{"content": "halfway through the narwhal refactor", "topic": "narwhal",
		"session_id": "s1", "promotable": "false", "tags": "wip,refactor"})
	id := ack["entity"].(map[string]any)["id"].(string)
	full := ok(t, a, "recall", map[string]any{"id": id})["entity"].(map[string]any)
	if m := full["metadata"].(map[string]any); m["memory_role"] != "session_context" || m["promotable"] != false || m["topic"] != "narwhal" {
		t.Fatalf("stored %v", full)
	}
	fail(t, b, "recall", map[string]any{"id": id}, "NOT_FOUND")
	if r := ok(t, b, "search", map[string]any{"query": "narwhal", "memory_role": "session_context"}); len(r["results"].([]any)) != 0 {
		t.Fatalf("B finds A's context: %v", r)
	}

	dry := ok(t, a, "groom_session_context", map[string]any{"older_than": "0d", "topic": "narwhal"})
	if dry["eligible"] != float64(1) || dry["archived"] != float64(0) || dry["items"].([]any)[0].(map[string]any)["id"] != id {
		t.Fatalf("dry run %v", dry)
	}
	if other := ok(t, b, "groom_session_context", map[string]any{"older_than": "0d", "mode": "archive"}); other["eligible"] != float64(0) {
		t.Fatalf("B groomed A's context: %v", other)
	}
	fail(t, a, "groom_session_context", map[string]any{"mode": "promote"}, "VALIDATION")
	fail(t, a, "groom_session_context", map[string]any{"older_than": "7x"}, "VALIDATION")
	if done := ok(t, a, "groom_session_context", map[string]any{"older_than": "0d", "mode": "archive"}); done["archived"] != float64(1) {
		t.Fatalf("archive %v", done)
	}
}
