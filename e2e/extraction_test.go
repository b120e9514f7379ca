package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
)

// fakeAnthropic speaks the Messages API: a forced tool call whose input is
// the extraction for the meeting note, an empty one for anything else.
func fakeAnthropic(t *testing.T, calls *atomic.Int32) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Tools    []struct{ Name string }
			Messages []struct {
				Content any `json:"content"`
			}
		}
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != "sk-ant-test" || json.Unmarshal(body, &req) != nil || len(req.Tools) != 1 {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad request"}}`)
			return
		}
		calls.Add(1)
		input := map[string]any{"entities": []any{}, "relations": []any{}}
		if strings.Contains(string(body), "Orbit standup") {
			input = map[string]any{
				"entities": []map[string]any{{"name": "Orbit", "type": "project"}, {"name": "Priya Nair", "type": "person"}},
				"relations": []map[string]any{
					{"source": "SELF", "target": "Orbit", "relation": "part_of", "confidence": 0.9},
					{"source": "SELF", "target": "Priya Nair", "relation": "involves", "confidence": 0.85},
				},
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "msg_01", "type": "message", "role": "assistant", "model": req.Model, "stop_reason": "tool_use",
			"content": []map[string]any{{"type": "tool_use", "id": "toolu_01", "name": req.Tools[0].Name, "input": input}},
			"usage":   map[string]any{"input_tokens": 420, "output_tokens": 61},
		})
	}))
}

// TestServerExtraction: the real server with EXTRACTION_ENABLED embeds a
// note, extracts it through the Anthropic client, resolves one name and
// auto-creates the other, and serves the edges over REST.
func TestServerExtraction(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	llm := fakeAnthropic(t, &calls)
	defer llm.Close()
	dsn := freshDSN(t)
	s := startServer(t, dsn, "EXTRACTION_ENABLED=true", "EXTRACTION_PROVIDER=anthropic", "ANTHROPIC_API_KEY=sk-ant-test",
		"EXTRACTION_BASE_URL="+llm.URL, "EXTRACTION_MODEL=claude-test", "EXTRACTION_AUTO_CREATE_ENTITIES=true")
	ac := adminClient(t, dsn)
	key, _ := newKey(t, ac, postgram.KeySpec{Name: "agent", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})
	code, body := api(t, "POST", s.URL+"/api/entities", key, map[string]any{"type": "project", "content": "Orbit"})
	if code != 201 {
		t.Fatalf("store project: %d %v", code, body)
	}
	orbit := body["entity"].(map[string]any)["id"].(string)
	code, body = api(t, "POST", s.URL+"/api/entities", key, map[string]any{"type": "interaction",
		"content": "Orbit standup: Priya Nair demoed the scheduler."})
	if code != 201 {
		t.Fatalf("store note: %d %v", code, body)
	}
	note := body["entity"].(map[string]any)["id"].(string)
	deadline := time.Now().Add(20 * time.Second)
	var edges []any
	for {
		code, body = api(t, "GET", s.URL+"/api/entities/"+note+"/edges", key, nil)
		if code != 200 {
			t.Fatalf("edges: %d %v", code, body)
		}
		edges, _ = body["edges"].([]any)
		if len(edges) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("edges after 20s: %v\n%s", body, s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := map[string]string{}
	for _, x := range edges {
		e := x.(map[string]any)
		if e["source"] != "llm-extraction" || e["source_id"] != note {
			t.Fatalf("edge: %v", e)
		}
		got[e["relation"].(string)] = e["target_id"].(string)
	}
	if got["part_of"] != orbit || got["involves"] == "" {
		t.Fatalf("edges: %v", got)
	}
	code, body = api(t, "GET", s.URL+"/api/entities/"+got["involves"], key, nil)
	p := body["entity"].(map[string]any)
	if code != 200 || p["content"] != "Priya Nair" || p["type"] != "person" || !strings.Contains(fmt.Sprint(p["tags"]), "auto-created") {
		t.Fatalf("placeholder: %d %v", code, body)
	}
	// The project's own extraction may still be running once the note's
	// edges exist: wait for both to be marked completed.
	for {
		code, body = api(t, "GET", s.URL+"/api/queue", key, nil)
		ex, _ := body["extraction"].(map[string]any)
		if code != 200 || ex == nil || ex["failed"].(float64) != 0 {
			t.Fatalf("queue: %d %v", code, body)
		}
		if ex["completed"].(float64) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue after 20s: %v", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if calls.Load() < 2 {
		t.Fatalf("LLM calls: %d", calls.Load())
	}
}
