package anthropic

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestSDKIgnoresEnvironment sets the variables anthropic-sdk-go reads by
// default to bogus values and shows the client uses only its Config.
// Not parallel: t.Setenv.
func TestSDKIgnoresEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/bogus")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-env")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-From-Env: yes")
	t.Setenv("ANTHROPIC_PROFILE", "bogus-profile")
	t.Setenv("ANTHROPIC_CONFIG_DIR", t.TempDir())

	var seen []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Clone())
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","stop_reason":"tool_use",
			"content":[{"type":"tool_use","id":"toolu_1","name":"answer","input":{"ok":true}}]}`)
	}))
	defer srv.Close()

	c, err := New(Config{APIKey: "sk-ant-configured", BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GenerateJSON(context.Background(), llm.Request{Prompt: "p", Schema: map[string]any{"type": "object"}}); err != nil {
		t.Fatalf("GenerateJSON: %v", err)
	}
	if len(seen) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(seen))
	}
	h := seen[0]
	if got := h.Get("X-Api-Key"); got != "sk-ant-configured" {
		t.Errorf("X-Api-Key = %q, want the configured key", got)
	}
	for _, name := range []string{"Authorization", "X-From-Env"} {
		if v := h.Get(name); v != "" {
			t.Errorf("%s = %q came from the environment", name, v)
		}
	}
}

// TestNoSDKRetries: postgram's queues retry, so the SDK sends exactly one
// request per call, even for statuses it would retry.
func TestNoSDKRetries(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable, 529, http.StatusRequestTimeout} {
		var mu sync.Mutex
		calls := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls++
			mu.Unlock()
			w.Header().Set("Retry-After", "0")
			w.Header().Set("X-Should-Retry", "true")
			w.WriteHeader(status)
		}))
		c, err := New(Config{APIKey: "k", BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.GenerateJSON(context.Background(), llm.Request{Prompt: "p"}); err == nil {
			t.Errorf("HTTP %d: no error", status)
		}
		srv.Close()
		if calls != 1 {
			t.Errorf("HTTP %d: server saw %d requests, want 1 (no SDK retries)", status, calls)
		}
	}
}
