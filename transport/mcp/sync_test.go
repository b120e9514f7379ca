package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/syncproto"
)

func TestSyncTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// inbox.md leaves the folder below: archiving needs the delete scope.
	key := e.key(t, postgram.KeySpec{Name: "notes-agent", ClientID: "agent",
		Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeSync, postgram.ScopeDelete}})
	c := connect(t, e.ts.URL, bearer(key))

	plan := "# Plan\n\nShip SYNCMCP-7 on Friday.\n"
	files := []any{
		map[string]any{"path": "projects/plan.md", "content": plan},
		map[string]any{"path": "inbox.md", "content": "- buy milk\n", "sha": syncproto.SHA([]byte("- buy milk\n"))},
	}
	got := ok(t, c, "sync_push", map[string]any{"repo": "notes", "files": files})
	if want := map[string]any{"created": 2.0, "updated": 0.0, "unchanged": 0.0, "deleted": 0.0, "restored": 0.0}; !sameJSON(got, want) {
		t.Fatalf("first push %v", got)
	}
	// The same folder again, with files as a JSON string (as some agents send arrays): nothing written.
	js, _ := json.Marshal(files)
	if got := ok(t, c, "sync_push", map[string]any{"repo": "notes", "files": string(js)}); got["unchanged"] != 2.0 || got["created"] != 0.0 {
		t.Fatalf("no-change push %v", got)
	}
	// inbox.md leaves the folder, the plan changes.
	got = ok(t, c, "sync_push", map[string]any{"repo": "notes", "files": []any{
		map[string]any{"path": "projects/plan.md", "content": plan + "Moved to Monday.\n"}}})
	if got["updated"] != 1.0 || got["deleted"] != 1.0 {
		t.Fatalf("push after edits %v", got)
	}

	st := ok(t, c, "sync_status", map[string]any{"repo": "notes"})
	rows := st["files"].([]any)
	if st["repo"] != "notes" || st["synced"] != 1.0 || st["deleted"] != 1.0 || len(rows) != 2 {
		t.Fatalf("sync_status %v", st)
	}
	first := rows[0].(map[string]any)
	if first["path"] != "inbox.md" || first["sync_status"] != "deleted" || len(first) != 3 {
		t.Fatalf("compact status row %v", first)
	}
	planID := rows[1].(map[string]any)["entity_id"].(string)
	doc := ok(t, c, "recall", map[string]any{"id": planID})["entity"].(map[string]any)
	if doc["type"] != "document" || !strings.Contains(doc["content"].(string), "Moved to Monday") || doc["metadata"].(map[string]any)["title"] != "Plan" {
		t.Fatalf("synced document %v", doc)
	}
	// The full response is the REST shape.
	full := ok(t, c, "sync_status", map[string]any{"repo": "notes", "full_response": "true"})
	frow := full["files"].([]any)[1].(map[string]any)
	if frow["sha"] != syncproto.SHA([]byte(plan+"Moved to Monday.\n")) || frow["last_synced"] == nil || full["synced"] != nil {
		t.Fatalf("full sync_status %v", full)
	}
	res, _ := call(t, c, "sync_status", map[string]any{"repo": "notes", "toon": true})
	if txt := text(t, res); !strings.Contains(txt, "files[2]") {
		t.Fatalf("toon sync_status %q", txt)
	}

	// Bad input names the item.
	for _, tc := range []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{"repo": "notes", "files": []any{map[string]any{"path": "../x.md", "content": "x"}}}, "files[0].path"},
		{map[string]any{"repo": "notes", "files": []any{map[string]any{"path": "a.md", "content": "x"}, map[string]any{"path": "/abs.md", "content": "x"}}}, "files[1].path"},
		{map[string]any{"repo": "notes", "files": []any{map[string]any{"path": "a.md", "content": "x", "sha": syncproto.SHA([]byte("y"))}}}, "files[0].sha"},
		{map[string]any{"repo": "notes", "files": []any{map[string]any{"path": "a.md"}}}, "files[0].content"},
		{map[string]any{"repo": "notes", "files": []any{map[string]any{"path": "a.md", "content": "x", "mode": "0644"}}}, "files[0].mode"},
		{map[string]any{"repo": "notes", "files": []any{"not an object"}}, "files"},
		{map[string]any{"repo": "../notes", "files": []any{}}, "repo"},
		{map[string]any{"repo": "notes"}, "files"},
	} {
		body := fail(t, c, "sync_push", tc.args, "VALIDATION")
		if f, _ := body["details"].(map[string]any)["field"].(string); f != tc.field {
			t.Errorf("sync_push %v: field %q, want %q (%v)", tc.args, f, tc.field, body["message"])
		}
	}
	fail(t, c, "sync_status", map[string]any{"repo": "a/b"}, "VALIDATION")
	if st := ok(t, c, "sync_status", map[string]any{"repo": "notes"}); st["synced"] != 1.0 {
		t.Fatalf("a rejected push changed the repo: %v", st)
	}

	// Without the sync scope: FORBIDDEN.
	rw := connect(t, e.ts.URL, bearer(e.rwKey(t)))
	fail(t, rw, "sync_push", map[string]any{"repo": "notes", "files": []any{}}, "FORBIDDEN")
	fail(t, rw, "sync_status", map[string]any{"repo": "notes"}, "FORBIDDEN")
}

func TestSyncToolSchema(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := connect(t, e.ts.URL, bearer(e.rwKey(t)))
	res, err := c.ListTools(context.Background(), mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name != "sync_push" {
			continue
		}
		files, _ := tool.InputSchema.Properties["files"].(map[string]any)
		items, _ := files["items"].(map[string]any)
		props, _ := items["properties"].(map[string]any)
		if files["type"] != "array" || items["type"] != "object" || props["path"] == nil || props["content"] == nil || props["sha"] == nil {
			t.Fatalf("files schema %v", files)
		}
		if d := *tool.Annotations.DestructiveHint; !d || !strings.Contains(tool.Description, "WHOLE folder") {
			t.Fatalf("sync_push must warn that it archives missing files: %v %q", d, tool.Description)
		}
		return
	}
	t.Fatal("no sync_push tool")
}

func sameJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
