package openai_test

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/postgram-go/postgram/providers/openai"
)

// TestSDKIgnoresEnvironment sets the variables openai-go reads by default to
// bogus values and shows that neither the Embedder nor Chat uses them: the
// requests go to the configured server with the configured key only.
// Not parallel: t.Setenv.
func TestSDKIgnoresEnvironment(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/bogus")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_ORG_ID", "org-from-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-from-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Env: yes")

	var mu sync.Mutex
	var seen []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/embeddings":
			io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2,0.3]}],"model":"m"}`)
		case "/v1/chat/completions":
			io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{\"ok\":true}"},"finish_reason":"stop"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	e, err := openai.New(openai.Config{APIKey: "sk-configured", BaseURL: srv.URL + "/v1", Model: "m", Dimensions: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.EmbedBatch(context.Background(), []string{"hello"}); err != nil {
		t.Fatalf("EmbedBatch: %v", err)
	}
	c, err := openai.NewChat(openai.ChatConfig{APIKey: "sk-configured", BaseURL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GenerateJSON(context.Background(), llm.Request{System: "s", Prompt: "p"}); err != nil {
		t.Fatalf("GenerateJSON: %v", err)
	}
	// A keyless compatible server gets no Authorization header, not the env key.
	k, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m", Dimensions: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.EmbedBatch(context.Background(), []string{"hello"}); err != nil {
		t.Fatalf("keyless EmbedBatch: %v", err)
	}

	if len(seen) != 3 {
		t.Fatalf("server saw %d requests, want 3", len(seen))
	}
	for i, h := range seen {
		wantAuth := "Bearer sk-configured"
		if i == 2 {
			wantAuth = ""
		}
		if got := h.Get("Authorization"); got != wantAuth {
			t.Errorf("request %d: Authorization %q, want %q", i, got, wantAuth)
		}
		for _, name := range []string{"OpenAI-Organization", "OpenAI-Project", "X-From-Env"} {
			if v := h.Get(name); v != "" {
				t.Errorf("request %d: %s = %q came from the environment", i, name, v)
			}
		}
	}
}

// TestNoSDKRetries: postgram's queues retry, so the SDK must send exactly
// one request per call even for statuses it would retry (429, 5xx, 408).
func TestNoSDKRetries(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusRequestTimeout} {
		var mu sync.Mutex
		calls := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls++
			mu.Unlock()
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(status)
		}))
		e, err := openai.New(openai.Config{APIKey: "k", BaseURL: srv.URL, Model: "m", Dimensions: 3})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.EmbedBatch(context.Background(), []string{"x"}); err == nil {
			t.Errorf("HTTP %d: no error", status)
		}
		c, err := openai.NewChat(openai.ChatConfig{APIKey: "k", BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.GenerateJSON(context.Background(), llm.Request{Prompt: "p"}); err == nil {
			t.Errorf("HTTP %d: chat: no error", status)
		}
		srv.Close()
		if calls != 2 {
			t.Errorf("HTTP %d: server saw %d requests for 2 calls, want 2 (no SDK retries)", status, calls)
		}
	}
}
