package openai

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/postgram-go/postgram"
)

// chatServer answers POST /v1/chat/completions with handler after handing
// the request and its decoded body to check.
func chatServer(t *testing.T, check func(*http.Request, map[string]any), handler func(w http.ResponseWriter)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("request is not JSON: %v", err)
		}
		if check != nil {
			check(r, body)
		}
		w.Header().Set("Content-Type", "application/json")
		handler(w)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// completion is a realistic chat completion carrying content.
func completion(content, finish string) string {
	c, _ := json.Marshal(content)
	return `{"id":"chatcmpl-AbC123","object":"chat.completion","created":1745000000,"model":"gpt-4o-mini-2024-07-18",
"choices":[{"index":0,"message":{"role":"assistant","content":` + string(c) + `,"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"` + finish + `"}],
"usage":{"prompt_tokens":412,"completion_tokens":88,"total_tokens":500},"system_fingerprint":"fp_0123"}`
}

const goodAnswer = `{"entities":[{"name":"Alice Chen","type":"person"},{"name":"Project Atlas","type":"project"}],
"relations":[{"source":"SELF","target":"Alice Chen","relation":"involves","confidence":0.92},
{"source":"Alice Chen","target":"Project Atlas","relation":"Works On","confidence":0.8}]}`

func TestChatExtractSuccess(t *testing.T) {
	t.Parallel()
	var got map[string]any
	srv := chatServer(t, func(_ *http.Request, b map[string]any) { got = b }, func(w http.ResponseWriter) {
		io.WriteString(w, completion(goodAnswer, "stop"))
	})
	x, err := NewExtractor(ChatConfig{APIKey: "sk-test", BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := x.Extract(context.Background(), llm.ExtractInput{Type: postgram.TypeDocument, Name: "Kickoff notes",
		Content: "Alice Chen kicked off Project Atlas.", Known: []llm.KnownEntity{{Name: "Alice Chen", Type: postgram.TypePerson}}})
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Extraction{
		Entities: []llm.ExtractedEntity{{Name: "Alice Chen", Type: postgram.TypePerson}, {Name: "Project Atlas", Type: postgram.TypeProject}},
		Relations: []llm.ExtractedRelation{
			{Source: "SELF", Target: "Alice Chen", Relation: "involves", Confidence: 0.92},
			{Source: "Alice Chen", Target: "Project Atlas", Relation: "works_on", Confidence: 0.8},
		},
		Info: llm.ExtractorInfo{Provider: "openai", Model: DefaultChatModel, PromptVersion: llm.ExtractPromptVersion},
	}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("extraction (-want +got):\n%s", d)
	}
	if got["model"] != DefaultChatModel {
		t.Errorf("model = %v", got["model"])
	}
	rf, _ := got["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["strict"] != true || js["name"] != "graph_extraction" || js["schema"] == nil {
		t.Errorf("response_format = %v", rf)
	}
	if got["max_completion_tokens"] == nil || got["max_tokens"] != nil {
		t.Errorf("OpenAI takes max_completion_tokens: %v", got)
	}
	msgs, _ := got["messages"].([]any)
	if len(msgs) != 2 || !strings.Contains(msgs[1].(map[string]any)["content"].(string), "Alice Chen (person)") {
		t.Errorf("messages = %v", msgs)
	}
}

func TestChatCompatibleDialect(t *testing.T) {
	t.Parallel()
	var got map[string]any
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		json.NewDecoder(r.Body).Decode(&got)
		// vLLM-style: JSON wrapped in a Markdown fence.
		io.WriteString(w, completion("```json\n"+goodAnswer+"\n```", "stop"))
	}))
	defer srv.Close()
	c, err := NewChat(ChatConfig{BaseURL: srv.URL + "/v1", Provider: "openai-compatible", Model: "qwen2.5-7b-instruct"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.GenerateJSON(context.Background(), llm.Request{System: "s", Prompt: "p", SchemaName: "x",
		Schema: map[string]any{"type": "object"}, MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(raw) || !strings.HasPrefix(string(raw), "{") {
		t.Errorf("raw = %s", raw)
	}
	if auth != "" {
		t.Errorf("no key configured but Authorization = %q", auth)
	}
	if got["max_tokens"] != float64(100) || got["max_completion_tokens"] != nil {
		t.Errorf("compatible servers take max_tokens: %v", got)
	}
	if c.Info() != (llm.Info{Provider: "openai-compatible", Model: "qwen2.5-7b-instruct"}) {
		t.Errorf("info = %+v", c.Info())
	}
}

func TestChatFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		slow       bool
		want       error
		message    string
		retryAfter time.Duration
	}{
		{name: "bad request", status: 400, body: `{"error":{"message":"Invalid schema for response_format 'graph_extraction'","type":"invalid_request_error","param":"response_format","code":null}}`,
			want: postgram.ErrLLMFailed, message: "Invalid schema"},
		{name: "unauthorized", status: 401, body: `{"error":{"message":"Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`,
			want: postgram.ErrLLMFailed, message: "[REDACTED]"},
		{name: "rate limited", status: 429, header: map[string]string{"Retry-After": "20"},
			body: `{"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-x on tokens per min (TPM): Limit 200000, Used 199500, Requested 900.","type":"tokens","code":"rate_limit_exceeded"}}`,
			want: postgram.ErrRateLimited, message: "retry after 20s", retryAfter: 20 * time.Second},
		{name: "rate limited in milliseconds", status: 429, header: map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"},
			body: `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			want: postgram.ErrRateLimited, message: "(retry after 1.5s)", retryAfter: 1500 * time.Millisecond},
		{name: "quota exhausted", status: 429,
			body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			want: postgram.ErrRateLimited, message: "code: insufficient_quota"},
		{name: "bad gateway", status: 502, body: "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n</html>", want: postgram.ErrUnavailable, message: "502 Bad Gateway"},
		{name: "error with 200", status: 200, body: `{"error":{"message":"The model produced invalid content.","type":"model_error"}}`,
			want: postgram.ErrLLMFailed, message: "provider error: The model produced invalid content. (type: model_error)"},
		{name: "truncated but parseable", status: 200, body: completion(`{"entities":[],"relations":[]}`, "length"), want: postgram.ErrLLMFailed, message: "finish_reason length"},
		{name: "tool call instead of content", status: 200, body: `{"id":"chatcmpl-3","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"x","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			want: postgram.ErrLLMFailed, message: "no content"},
		{name: "unknown entity type", status: 200, body: completion(`{"entities":[{"name":"Bob","type":"alien"}],"relations":[]}`, "stop"),
			want: postgram.ErrLLMFailed, message: `entities[0].type "alien" is not an entity type`},
		{name: "server error", status: 503, body: `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error"}}`,
			want: postgram.ErrUnavailable, message: "overloaded"},
		{name: "timeout", status: 200, slow: true, body: completion(goodAnswer, "stop"), want: postgram.ErrUnavailable, message: "no complete response"},
		{name: "malformed body", status: 200, body: `{"id":"chatcmpl-1","choices":[{"index":0,"message":`, want: postgram.ErrLLMFailed, message: "malformed response JSON"},
		{name: "malformed answer", status: 200, body: completion(`{"entities":[],"relations":[{"source":"SELF",`, "stop"), want: postgram.ErrLLMFailed, message: "not JSON"},
		{name: "prose answer", status: 200, body: completion(`I could not find any relations.`, "stop"), want: postgram.ErrLLMFailed, message: "not JSON"},
		{name: "truncated", status: 200, body: completion(`{"entities":[],"relations":[`, "length"), want: postgram.ErrLLMFailed, message: "truncated"},
		{name: "refusal", status: 200, body: `{"id":"chatcmpl-2","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I'm sorry, I can't help with that request."},"finish_reason":"stop"}]}`,
			want: postgram.ErrLLMFailed, message: "refused: I'm sorry"},
		{name: "content filter", status: 200, body: completion(``, "content_filter"), want: postgram.ErrLLMFailed, message: "content filter"},
		{name: "no choices", status: 200, body: `{"id":"x","choices":[]}`, want: postgram.ErrLLMFailed, message: "no choices"},
		{name: "off schema", status: 200, body: completion(`{"entities":[],"relations":[{"source":"SELF","target":"Bob","relation":"knows","confidence":1.7}]}`, "stop"),
			want: postgram.ErrLLMFailed, message: "confidence 1.7 is not between 0 and 1"},
		{name: "missing relations", status: 200, body: completion(`{"entities":[]}`, "stop"), want: postgram.ErrLLMFailed, message: "relations is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := chatServer(t, nil, func(w http.ResponseWriter) {
				if tt.slow {
					time.Sleep(300 * time.Millisecond)
				}
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			// Only the slow case may hit the timeout; the others get room
			// for a loaded machine.
			timeout := 10 * time.Second
			if tt.slow {
				timeout = 100 * time.Millisecond
			}
			x, err := NewExtractor(ChatConfig{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			_, err = x.Extract(context.Background(), llm.ExtractInput{Type: postgram.TypeMemory, Content: "Bob met Alice."})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("err = %q, want it to mention %q", err, tt.message)
			}
			if strings.Contains(err.Error(), "sk-test") {
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

func TestChatRequest(t *testing.T) {
	t.Parallel()
	schema := map[string]any{"type": "object", "properties": map[string]any{}, "required": []any{}, "additionalProperties": false}
	tests := []struct {
		name   string
		cfg    ChatConfig
		req    llm.Request
		header map[string]string
		want   map[string]any // expected request fields; nil values must be absent
	}{
		{name: "openai", cfg: ChatConfig{APIKey: "sk-test", UserAgent: "postgram-test/1"},
			req:    llm.Request{System: "s", Prompt: "p", SchemaName: "verdict", Schema: schema, MaxTokens: 512},
			header: map[string]string{"Authorization": "Bearer sk-test", "User-Agent": "postgram-test/1", "Content-Type": "application/json"},
			want: map[string]any{"model": DefaultChatModel, "temperature": float64(0), "max_completion_tokens": float64(512), "max_tokens": nil,
				"reasoning_effort": nil, "stream": nil,
				"messages":        []any{map[string]any{"role": "system", "content": "s"}, map[string]any{"role": "user", "content": "p"}},
				"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "verdict", "strict": true, "schema": schema}}}},
		{name: "reasoning model", cfg: ChatConfig{APIKey: "sk-test", Model: "gpt-5-mini", ReasoningEffort: "low"},
			req:    llm.Request{Prompt: "p", SchemaName: "verdict", Schema: schema},
			header: map[string]string{"Authorization": "Bearer sk-test"},
			want:   map[string]any{"model": "gpt-5-mini", "temperature": nil, "reasoning_effort": "low", "max_completion_tokens": nil}},
		{name: "unnamed schema", cfg: ChatConfig{APIKey: "sk-test"},
			req: llm.Request{Prompt: "p", Schema: schema},
			want: map[string]any{"response_format": map[string]any{"type": "json_schema",
				"json_schema": map[string]any{"name": "answer", "strict": true, "schema": schema}}}},
		{name: "no schema", cfg: ChatConfig{Provider: "openai-compatible", Model: "llama-3.1-8b-instruct"},
			req:    llm.Request{Prompt: "p", MaxTokens: 64},
			header: map[string]string{"Authorization": ""},
			want:   map[string]any{"response_format": map[string]any{"type": "json_object"}, "max_tokens": float64(64), "max_completion_tokens": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var body map[string]any
			var header http.Header
			srv := chatServer(t, func(r *http.Request, b map[string]any) { header, body = r.Header.Clone(), b }, func(w http.ResponseWriter) {
				io.WriteString(w, completion(`{"ok":true}`, "stop"))
			})
			tt.cfg.BaseURL = srv.URL + "/v1"
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
			for k, v := range tt.header {
				if got := header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			for k, want := range tt.want {
				got, ok := body[k]
				if want == nil {
					if ok {
						t.Errorf("%s = %v, want it absent", k, got)
					}
					continue
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s (-want +got):\n%s", k, d)
				}
			}
		})
	}
}

func TestChatConfig(t *testing.T) {
	t.Parallel()
	c, err := NewChat(ChatConfig{APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	if c.base != DefaultBaseURL || c.Info() != (llm.Info{Provider: "openai", Model: DefaultChatModel}) ||
		c.client.Timeout != DefaultChatTimeout || c.compatible {
		t.Errorf("defaults: base %q, info %+v, timeout %s, compatible %v", c.base, c.Info(), c.client.Timeout, c.compatible)
	}
	if c, err := NewChat(ChatConfig{BaseURL: "http://127.0.0.1:8000/v1", Provider: "openai-compatible"}); err != nil || !c.compatible {
		t.Errorf("a keyless compatible server: %v, compatible %v", err, c != nil && c.compatible)
	}
	tests := []struct {
		cfg   ChatConfig
		field string
	}{
		{ChatConfig{APIKey: "sk-test", BaseURL: "ftp://x"}, "base_url"},
		{ChatConfig{APIKey: "sk-test", BaseURL: "https://api.openai.com/v1?x=1"}, "base_url"},
		{ChatConfig{}, "api_key"},
		{ChatConfig{BaseURL: "https://API.openai.com/v1/"}, "api_key"},
		{ChatConfig{APIKey: "sk-\ntest"}, "api_key"},
		{ChatConfig{APIKey: "sk-test", Model: " gpt"}, "model"},
		{ChatConfig{APIKey: "sk-test", Model: "gpt\t4o"}, "model"},
		{ChatConfig{APIKey: "sk-test", Provider: "open ai"}, "provider"},
		{ChatConfig{APIKey: "sk-test", ReasoningEffort: "extreme"}, "reasoning_effort"},
		{ChatConfig{APIKey: "sk-test", Timeout: -time.Second}, "timeout"},
		{ChatConfig{APIKey: "sk-test", UserAgent: "a\r\nb"}, "user_agent"},
	}
	for _, tt := range tests {
		_, err := NewChat(tt.cfg)
		if !errors.Is(err, postgram.ErrInvalidArgument) || postgram.FieldOf(err) != tt.field {
			t.Errorf("NewChat(%+v) = %v, want an invalid %s", tt.cfg, err, tt.field)
		}
		if err != nil && strings.Contains(err.Error(), "sk-test") {
			t.Errorf("NewChat: the API key leaked: %v", err)
		}
	}
}
