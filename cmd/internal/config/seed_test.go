package config

import (
	"github.com/postgram-go/postgram/llm"

	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
)

// TestSeedVariables: the reference server's variables work as its README
// documents them (LOG_LEVEL's pino levels, LLM_REQUEST_TIMEOUT_MS,
// EXTRACTION_DISABLE_THINKING).
func TestSeedVariables(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		level string
		want  slog.Level
	}{{"trace", slog.LevelDebug}, {"debug", slog.LevelDebug}, {"", slog.LevelInfo}, {"INFO", slog.LevelInfo},
		{"warn", slog.LevelWarn}, {"error", slog.LevelError}, {"fatal", slog.LevelError}, {"silent", LevelSilent}} {
		e, err := Parse(env(map[string]string{"LOG_LEVEL": c.level}))
		if err != nil || e.LogLevel != c.want {
			t.Errorf("LOG_LEVEL=%s: %v, %v; want %v", c.level, levelOf(e), err, c.want)
		}
	}
	if _, err := Parse(env(map[string]string{"LOG_LEVEL": "loud"})); err == nil || !strings.Contains(err.Error(), "LOG_LEVEL") {
		t.Errorf("LOG_LEVEL=loud: %v", err)
	}

	for _, c := range []struct {
		vars map[string]string
		want time.Duration
		err  string
	}{
		{map[string]string{}, 120 * time.Second, ""},
		{map[string]string{"LLM_REQUEST_TIMEOUT_MS": "300000"}, 300 * time.Second, ""},
		{map[string]string{"EXTRACTION_TIMEOUT_MS": "5000"}, 5 * time.Second, ""},
		{map[string]string{"EXTRACTION_TIMEOUT_MS": "5000", "LLM_REQUEST_TIMEOUT_MS": "5000"}, 5 * time.Second, ""},
		{map[string]string{"EXTRACTION_TIMEOUT_MS": "5000", "LLM_REQUEST_TIMEOUT_MS": "6000"}, 0, "disagree"},
		{map[string]string{"LLM_REQUEST_TIMEOUT_MS": "soon"}, 0, "LLM_REQUEST_TIMEOUT_MS"},
	} {
		e, err := Parse(env(c.vars))
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want %q", c.vars, err, c.err)
			}
		case err != nil:
			t.Errorf("%v: %v", c.vars, err)
		case e.Extraction.Timeout != c.want:
			t.Errorf("%v: timeout %v, want %v", c.vars, e.Extraction.Timeout, c.want)
		}
	}
	if _, err := Parse(env(map[string]string{"EXTRACTION_DISABLE_THINKING": "perhaps"})); err == nil || !strings.Contains(err.Error(), "EXTRACTION_DISABLE_THINKING") {
		t.Errorf("EXTRACTION_DISABLE_THINKING=perhaps: %v", err)
	}
}

// TestDisableThinkingOnTheWire: EXTRACTION_DISABLE_THINKING=true sends
// think false to Ollama and reasoning_effort minimal to OpenAI, unless
// EXTRACTION_REASONING_EFFORT says otherwise.
func TestDisableThinkingOnTheWire(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		mu.Lock()
		bodies = append(bodies, m)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/api/chat") {
			_, _ = io.WriteString(w, `{"model":"m","message":{"role":"assistant","content":"{\"ok\":true}"},"done":true,"done_reason":"stop"}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"{\"ok\":true}"}}]}`)
	}))
	t.Cleanup(srv.Close)
	last := func() map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return bodies[len(bodies)-1]
	}
	for _, c := range []struct {
		name string
		vars map[string]string
		key  string
		want any // nil: the key is absent
	}{
		{"ollama off", map[string]string{"EXTRACTION_PROVIDER": "ollama", "OLLAMA_BASE_URL": srv.URL, "EXTRACTION_DISABLE_THINKING": "true"}, "think", false},
		{"ollama default", map[string]string{"EXTRACTION_PROVIDER": "ollama", "OLLAMA_BASE_URL": srv.URL}, "think", nil},
		{"ollama effort wins", map[string]string{"EXTRACTION_PROVIDER": "ollama", "OLLAMA_BASE_URL": srv.URL, "EXTRACTION_DISABLE_THINKING": "true",
			"EXTRACTION_REASONING_EFFORT": "high"}, "think", "high"},
		{"openai off", map[string]string{"EXTRACTION_PROVIDER": "openai", "EXTRACTION_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "sk-test",
			"EXTRACTION_DISABLE_THINKING": "true"}, "reasoning_effort", "minimal"},
		{"openai default", map[string]string{"EXTRACTION_PROVIDER": "openai", "EXTRACTION_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "sk-test"},
			"reasoning_effort", nil},
		{"openai-compatible untouched", map[string]string{"EXTRACTION_PROVIDER": "openai-compatible", "EXTRACTION_BASE_URL": srv.URL + "/v1",
			"EXTRACTION_DISABLE_THINKING": "true"}, "reasoning_effort", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			vars := map[string]string{"EXTRACTION_ENABLED": "true", "EXTRACTION_MODEL": "m"}
			for k, v := range c.vars {
				vars[k] = v
			}
			e, err := Parse(env(vars))
			if err != nil {
				t.Fatal(err)
			}
			model, err := e.Extraction.LLM(postgram.ExtractOverride{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := model.GenerateJSON(t.Context(), llm.Request{System: "s", Prompt: "p"}); err != nil {
				t.Fatal(err)
			}
			got, ok := last()[c.key]
			if c.want == nil {
				if ok {
					t.Fatalf("%s sent as %v", c.key, got)
				}
				return
			}
			if got != c.want {
				t.Fatalf("%s = %v, want %v", c.key, got, c.want)
			}
		})
	}
}

func levelOf(e *Env) any {
	if e == nil {
		return nil
	}
	return e.LogLevel
}
