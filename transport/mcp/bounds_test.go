package mcp_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	pmcp "github.com/postgram-go/postgram/transport/mcp"
)

// TestResultBound: a tool result larger than MaxResultBytes is a
// VALIDATION tool error telling the caller to ask for less; a smaller one
// is answered.
func TestResultBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for range 3 {
		if _, err := e.admin.CreateTask(context.Background(), postgram.TaskInput{Content: strings.Repeat("w", 300_000)}); err != nil {
			t.Fatal(err)
		}
	}
	srv := pmcp.NewServer(pmcp.Config{Client: e.admin, Version: "test", MaxResultBytes: 500_000})
	ts := httptest.NewServer(pmcp.HTTPHandler(srv, postgramtest.Admin(t, e.admin), nil))
	t.Cleanup(ts.Close)
	c := connect(t, ts.URL, bearer(e.rwKey(t)))
	body := fail(t, c, "task_list", map[string]any{"limit": 3, "full_response": true}, "VALIDATION")
	if msg := body["message"].(string); !strings.Contains(msg, "more than the 500000") || !strings.Contains(msg, "page") {
		t.Fatalf("message: %q", msg)
	}
	ok(t, c, "task_list", map[string]any{"limit": 1, "full_response": true})
}
