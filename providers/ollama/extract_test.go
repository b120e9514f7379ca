package ollama

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/postgram-go/postgram"
)

const chatKey = "ollama-proxy-secret-0123456789"

// chatCapture is one request the fake /api/chat received.
type chatCapture struct {
	method, path string
	header       http.Header
	body         map[string]any
}

// chatServer is a stand-in for an Ollama server's /api/chat: it records
// each request and answers with respond.
func chatServer(t *testing.T, respond func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, func() []chatCapture) {
	t.Helper()
	var mu sync.Mutex
	var got []chatCapture
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		mu.Lock()
		got = append(got, chatCapture{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body})
		mu.Unlock()
		respond(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []chatCapture {
		mu.Lock()
		defer mu.Unlock()
		return append([]chatCapture(nil), got...)
	}
}

// answer writes status, headers and body.
func answer(status int, header map[string]string, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// chatDone is a realistic non-streaming /api/chat response.
func chatDone(content, doneReason string) string {
	c, _ := json.Marshal(content)
	return `{"model":"llama3.2","created_at":"2025-05-12T09:21:44.412789Z","message":{"role":"assistant","content":` + string(c) + `},
"done_reason":"` + doneReason + `","done":true,"total_duration":5191566416,"load_duration":2154458,"prompt_eval_count":1026,
"prompt_eval_duration":383809000,"eval_count":113,"eval_duration":4799921000}`
}

const goodChat = `{"entities": [{"name": "Alice Chen", "type": "person"}, {"name": "Project Atlas", "type": "project"}],
"relations": [{"source": "SELF", "target": "Alice Chen", "relation": "involves", "confidence": 0.92},
{"source": "Alice Chen", "target": "Project Atlas", "relation": "Works On", "confidence": 0.8}]}`

func TestChatExtractSuccess(t *testing.T) {
	t.Parallel()
	want := &llm.Extraction{
		Entities: []llm.ExtractedEntity{{Name: "Alice Chen", Type: postgram.TypePerson}, {Name: "Project Atlas", Type: postgram.TypeProject}},
		Relations: []llm.ExtractedRelation{
			{Source: "SELF", Target: "Alice Chen", Relation: "involves", Confidence: 0.92},
			{Source: "Alice Chen", Target: "Project Atlas", Relation: "works_on", Confidence: 0.8},
		},
		Info: llm.ExtractorInfo{Provider: "ollama", Model: DefaultChatModel, PromptVersion: llm.ExtractPromptVersion},
	}
	tests := []struct {
		name string
		body string
	}{
		{name: "structured answer", body: chatDone(goodChat, "stop")},
		{name: "fenced answer", body: chatDone("```json\n"+goodChat+"\n```", "stop")},
		{name: "think block first", body: chatDone("<think>\nAlice is a person.\n</think>\n"+goodChat, "stop")},
		{name: "thinking field", body: `{"model":"llama3.2","created_at":"2025-05-12T09:21:44Z","message":{"role":"assistant","content":` +
			mustJSON(goodChat) + `,"thinking":"The note names Alice."},"done_reason":"stop","done":true,"eval_count":90}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, requests := chatServer(t, answer(http.StatusOK, nil, tt.body))
			x, err := NewExtractor(ChatConfig{BaseURL: srv.URL + "/"})
			if err != nil {
				t.Fatal(err)
			}
			out, err := x.Extract(context.Background(), llm.ExtractInput{Type: postgram.TypeDocument, Name: "Kickoff notes",
				Content: "Alice Chen kicked off Project Atlas.", Known: []llm.KnownEntity{{Name: "Alice Chen", Type: postgram.TypePerson}}})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, out); d != "" {
				t.Errorf("extraction (-want +got):\n%s", d)
			}
			reqs := requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.method != http.MethodPost || r.path != "/api/chat" {
				t.Errorf("request = %s %s, want POST /api/chat", r.method, r.path)
			}
			if r.header.Get("Authorization") != "" || r.header.Get("Content-Type") != "application/json" {
				t.Errorf("headers = %v", r.header)
			}
			b := r.body
			if b["model"] != DefaultChatModel || b["stream"] != false {
				t.Errorf("model, stream = %v, %v", b["model"], b["stream"])
			}
			if _, ok := b["think"]; ok {
				t.Errorf("think sent without ReasoningEffort: %v", b["think"])
			}
			if d := cmp.Diff(map[string]any{"temperature": float64(0), "num_predict": float64(4096)}, b["options"]); d != "" {
				t.Errorf("options (-want +got):\n%s", d)
			}
			format, _ := b["format"].(map[string]any)
			props, _ := format["properties"].(map[string]any)
			if format["type"] != "object" || props["entities"] == nil || props["relations"] == nil {
				t.Errorf("format = %v, want the extraction schema", b["format"])
			}
			msgs, _ := b["messages"].([]any)
			if len(msgs) != 2 {
				t.Fatalf("messages = %v", msgs)
			}
			sys, _ := msgs[0].(map[string]any)
			user, _ := msgs[1].(map[string]any)
			if c, _ := sys["content"].(string); sys["role"] != "system" || !strings.Contains(c, "knowledge graph") {
				t.Errorf("messages[0] = %v", sys)
			}
			if c, _ := user["content"].(string); user["role"] != "user" || !strings.Contains(c, "Alice Chen (person)") {
				t.Errorf("messages[1] = %v", user)
			}
		})
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestChatRequestOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     ChatConfig
		req     llm.Request
		auth    string
		think   any // nil: absent
		options map[string]any
		format  any
	}{
		{name: "key, reasoning, context", cfg: ChatConfig{APIKey: chatKey, Model: "gpt-oss:20b", ReasoningEffort: "high", ContextLength: 16384},
			req:  llm.Request{System: "s", Prompt: "p", Schema: map[string]any{"type": "object"}, MaxTokens: 200},
			auth: "Bearer " + chatKey, think: "high", options: map[string]any{"temperature": float64(0), "num_predict": float64(200), "num_ctx": float64(16384)},
			format: map[string]any{"type": "object"}},
		{name: "minimal reasoning turns thinking off", cfg: ChatConfig{Model: "qwen3:8b", ReasoningEffort: "minimal"},
			req:   llm.Request{Prompt: "p", Schema: map[string]any{"type": "object"}},
			think: false, options: map[string]any{"temperature": float64(0)}, format: map[string]any{"type": "object"}},
		{name: "no schema means JSON mode", cfg: ChatConfig{},
			req:     llm.Request{Prompt: "p"},
			options: map[string]any{"temperature": float64(0)}, format: "json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, requests := chatServer(t, answer(http.StatusOK, nil, chatDone(`{"ok":true}`, "stop")))
			tt.cfg.BaseURL = srv.URL
			c, err := NewChat(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := c.GenerateJSON(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != `{"ok":true}` {
				t.Errorf("raw = %s", raw)
			}
			r := requests()[0]
			if got := r.header.Get("Authorization"); got != tt.auth {
				t.Errorf("Authorization = %q, want %q", got, tt.auth)
			}
			if d := cmp.Diff(tt.think, r.body["think"]); d != "" {
				t.Errorf("think (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.options, r.body["options"]); d != "" {
				t.Errorf("options (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.format, r.body["format"]); d != "" {
				t.Errorf("format (-want +got):\n%s", d)
			}
			if r.body["model"] != c.Info().Model {
				t.Errorf("model = %v, Info = %+v", r.body["model"], c.Info())
			}
		})
	}
}

func TestChatExtractFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		respond    func(http.ResponseWriter, *http.Request)
		want       error
		message    string
		retryAfter time.Duration
	}{
		{name: "model not pulled", respond: answer(404, nil, `{"error":"model \"llama3.2\" not found, try pulling it first"}`),
			want: postgram.ErrLLMFailed, message: `HTTP 404 Not Found: model "llama3.2" not found, try pulling it first`},
		{name: "bad schema", respond: answer(400, nil, `{"error":"invalid JSON schema in format"}`),
			want: postgram.ErrLLMFailed, message: "invalid JSON schema in format"},
		{name: "proxy rejects the key", respond: answer(401, nil, `{"error":"unknown token `+chatKey+`"}`),
			want: postgram.ErrLLMFailed, message: "unknown token [REDACTED]"},
		{name: "busy", respond: answer(429, map[string]string{"Retry-After": "3"}, `{"error":"server busy, please try again.  maximum pending requests exceeded"}`),
			want: postgram.ErrRateLimited, message: "server busy, please try again. maximum pending requests exceeded (retry after 3s)", retryAfter: 3 * time.Second},
		{name: "runner crashed", respond: answer(500, nil, `{"error":"llama runner process has terminated: signal: killed"}`),
			want: postgram.ErrUnavailable, message: "HTTP 500 Internal Server Error: llama runner process has terminated"},
		{name: "proxy down", respond: answer(503, nil, "upstream connect error or disconnect/reset before headers"),
			want: postgram.ErrUnavailable, message: "upstream connect error"},
		{name: "timeout", respond: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
			answer(200, nil, chatDone(goodChat, "stop"))(w, r)
		}, want: postgram.ErrUnavailable, message: "no complete response within 100ms"},
		{name: "malformed body", respond: answer(200, nil, `{"model":"llama3.2","message":{"role":"assistant","content":"{\"entities\"`),
			want: postgram.ErrLLMFailed, message: "malformed response JSON"},
		{name: "streamed despite stream false", respond: answer(200, nil, `{"model":"llama3.2","message":{"role":"assistant","content":"{"},"done":false}
{"model":"llama3.2","message":{"role":"assistant","content":"}"},"done":true,"done_reason":"stop"}`),
			want: postgram.ErrLLMFailed, message: "malformed response JSON"},
		{name: "error with 200", respond: answer(200, nil, `{"error":"an error was encountered while running the model: unexpected EOF"}`),
			want: postgram.ErrLLMFailed, message: "provider error: an error was encountered"},
		{name: "truncated", respond: answer(200, nil, chatDone(`{"entities": [{"name": "Alice Chen", "type": "per`, "length")),
			want: postgram.ErrLLMFailed, message: "truncated (done_reason length)"},
		{name: "truncated but parseable", respond: answer(200, nil, chatDone(`{"entities":[],"relations":[]}`, "length")),
			want: postgram.ErrLLMFailed, message: "truncated (done_reason length)"},
		{name: "refusal in prose", respond: answer(200, nil, chatDone("I'm sorry, but I can't help with that.", "stop")),
			want: postgram.ErrLLMFailed, message: `not JSON: "I'm sorry, but I can't help with that."`},
		{name: "refusal as a JSON string", respond: answer(200, nil, chatDone(`"I cannot extract relations from this text."`, "stop")),
			want: postgram.ErrLLMFailed, message: "not a JSON object"},
		{name: "empty answer", respond: answer(200, nil, chatDone("", "stop")),
			want: postgram.ErrLLMFailed, message: `not JSON: ""`},
		{name: "confidence out of range", respond: answer(200, nil, chatDone(
			`{"entities":[{"name":"Bob","type":"person"}],"relations":[{"source":"SELF","target":"Bob","relation":"involves","confidence":1.7}]}`, "stop")),
			want: postgram.ErrLLMFailed, message: "relations[0].confidence 1.7 is not between 0 and 1"},
		{name: "missing relations", respond: answer(200, nil, chatDone(`{"entities":[{"name":"Bob","type":"person"}]}`, "stop")),
			want: postgram.ErrLLMFailed, message: "relations is missing"},
		{name: "empty relation name", respond: answer(200, nil, chatDone(
			`{"entities":[],"relations":[{"source":"SELF","target":"","relation":"involves","confidence":0.5}]}`, "stop")),
			want: postgram.ErrLLMFailed, message: "relations[0].target is missing or empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := chatServer(t, tt.respond)
			timeout := 10 * time.Second // room for a loaded machine
			if tt.name == "timeout" {
				timeout = 100 * time.Millisecond
			}
			x, err := NewExtractor(ChatConfig{BaseURL: srv.URL, APIKey: chatKey, Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			out, err := x.Extract(context.Background(), llm.ExtractInput{Type: postgram.TypeMemory, Content: "Bob met Alice."})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Extract = %+v, %v; want an error wrapping %v", out, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("err = %q, want it to mention %q", err, tt.message)
			}
			// Schema errors come from postgram.ParseExtraction, unprefixed.
			if !strings.HasPrefix(err.Error(), "ollama chat: ") && !strings.Contains(err.Error(), "not the extraction schema") {
				t.Errorf("err = %q, want the ollama chat prefix", err)
			}
			if strings.Contains(err.Error(), chatKey) {
				t.Errorf("the API key leaked: %v", err)
			}
			var ra interface{ RetryAfter() time.Duration }
			switch {
			case errors.As(err, &ra):
				if ra.RetryAfter() != tt.retryAfter {
					t.Errorf("RetryAfter() = %v, want %v", ra.RetryAfter(), tt.retryAfter)
				}
			case tt.want == postgram.ErrRateLimited:
				t.Errorf("a rate-limit error %T has no RetryAfter method", err)
			}
		})
	}
}

func TestChatUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, err := NewChat(ChatConfig{BaseURL: url, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GenerateJSON(context.Background(), llm.Request{Prompt: "p", Schema: map[string]any{"type": "object"}})
	if !errors.Is(err, postgram.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestChatConfig(t *testing.T) {
	t.Parallel()
	c, err := NewChat(ChatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if c.base != DefaultBaseURL || c.Info() != (llm.Info{Provider: "ollama", Model: DefaultChatModel}) || c.client.Timeout != DefaultChatTimeout {
		t.Errorf("defaults: base %q, info %+v, timeout %s", c.base, c.Info(), c.client.Timeout)
	}
	tests := []struct {
		cfg   ChatConfig
		field string
	}{
		{ChatConfig{BaseURL: "localhost:11434"}, "base_url"},
		{ChatConfig{BaseURL: "http://localhost:11434/?x=1"}, "base_url"},
		{ChatConfig{Model: "llama3.2 "}, "model"},
		{ChatConfig{Model: "llama\n3.2"}, "model"},
		{ChatConfig{ContextLength: -1}, "context_length"},
		{ChatConfig{Timeout: -time.Second}, "timeout"},
		{ChatConfig{APIKey: chatKey + "\n"}, "api_key"},
		{ChatConfig{ReasoningEffort: "max"}, "reasoning_effort"},
	}
	for _, tt := range tests {
		_, err := NewChat(tt.cfg)
		if !errors.Is(err, postgram.ErrInvalidArgument) || postgram.FieldOf(err) != tt.field {
			t.Errorf("NewChat(%+v) = %v, want an invalid %s", tt.cfg, err, tt.field)
		}
		if err != nil && strings.Contains(err.Error(), chatKey) {
			t.Errorf("NewChat: the API key leaked: %v", err)
		}
	}
}
