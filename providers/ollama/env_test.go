package ollama_test

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/postgram-go/postgram/providers/ollama"
)

// TestSDKIgnoresEnvironment sets OLLAMA_HOST, which api.ClientFromEnvironment
// would read, to a bogus address and shows the providers use only their
// Config. Not parallel: t.Setenv.
func TestSDKIgnoresEnvironment(t *testing.T) {
	t.Setenv("OLLAMA_HOST", "http://127.0.0.1:1")
	var seen []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Clone(context.Background()))
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/embed":
			io.WriteString(w, `{"model":"m","embeddings":[[0.1,0.2,0.3]]}`)
		case "/api/chat":
			io.WriteString(w, `{"model":"m","message":{"role":"assistant","content":"{\"ok\":true}"},"done":true,"done_reason":"stop"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	e, err := ollama.New(ollama.Config{BaseURL: srv.URL, Model: "m", Dimensions: 3, APIKey: "configured"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.EmbedBatch(context.Background(), []string{"hello"}); err != nil {
		t.Fatalf("EmbedBatch: %v", err)
	}
	c, err := ollama.NewChat(ollama.ChatConfig{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GenerateJSON(context.Background(), llm.Request{Prompt: "p"}); err != nil {
		t.Fatalf("GenerateJSON: %v", err)
	}
	if len(seen) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(seen))
	}
	if got := seen[0].Header.Get("Authorization"); got != "Bearer configured" {
		t.Errorf("embed Authorization = %q, want the configured key", got)
	}
	if got := seen[1].Header.Get("Authorization"); got != "" {
		t.Errorf("keyless chat Authorization = %q, want none", got)
	}
}

// TestNoSDKRetries: one request per call whatever the status.
func TestNoSDKRetries(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		var mu sync.Mutex
		calls := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls++
			mu.Unlock()
			w.WriteHeader(status)
		}))
		e, err := ollama.New(ollama.Config{BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.EmbedBatch(context.Background(), []string{"x"}); err == nil {
			t.Errorf("HTTP %d: no error", status)
		}
		c, err := ollama.NewChat(ollama.ChatConfig{BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.GenerateJSON(context.Background(), llm.Request{Prompt: "p"}); err == nil {
			t.Errorf("HTTP %d: chat: no error", status)
		}
		srv.Close()
		if calls != 2 {
			t.Errorf("HTTP %d: server saw %d requests for 2 calls, want 2", status, calls)
		}
	}
}
