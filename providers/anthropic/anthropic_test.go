package anthropic

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

const testKey = "sk-ant-api03-TESTKEY-0123456789abcdef"

// captured is one request the fake Messages API received.
type captured struct {
	method, path string
	header       http.Header
	body         map[string]any
}

// messagesServer is a stand-in for api.anthropic.com: it records each
// request and answers with respond.
func messagesServer(t *testing.T, respond func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, func() []captured) {
	t.Helper()
	var mu sync.Mutex
	var got []captured
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		mu.Lock()
		got = append(got, captured{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body})
		mu.Unlock()
		respond(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []captured {
		mu.Lock()
		defer mu.Unlock()
		return append([]captured(nil), got...)
	}
}

// reply writes status, headers and body.
func reply(status int, header map[string]string, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_011CTestRequest")
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// messageBody is a realistic Messages API response with the given content
// blocks (JSON) and stop reason.
func messageBody(stop string, blocks ...string) string {
	return `{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001",
"content":[` + strings.Join(blocks, ",") + `],"stop_reason":"` + stop + `","stop_sequence":null,
"usage":{"input_tokens":1187,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":142,"service_tier":"standard"}}`
}

// toolUse is a tool_use content block carrying input (JSON).
func toolUse(input string) string {
	return `{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"graph_extraction","input":` + input + `}`
}

// text is a text content block.
func text(s string) string {
	b, _ := json.Marshal(s)
	return `{"type":"text","text":` + string(b) + `}`
}

// apiError is Anthropic's error body.
func apiError(typ, msg string) string {
	return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_011CTestRequest"}`
}

const goodInput = `{"entities":[{"name":"Alice Chen","type":"person"},{"name":"Project Atlas","type":"project"}],
"relations":[{"source":"SELF","target":"Alice Chen","relation":"involves","confidence":0.92},
{"source":"Alice Chen","target":"Project Atlas","relation":"Works On","confidence":0.8}]}`

var wantExtraction = &llm.Extraction{
	Entities: []llm.ExtractedEntity{{Name: "Alice Chen", Type: postgram.TypePerson}, {Name: "Project Atlas", Type: postgram.TypeProject}},
	Relations: []llm.ExtractedRelation{
		{Source: "SELF", Target: "Alice Chen", Relation: "involves", Confidence: 0.92},
		{Source: "Alice Chen", Target: "Project Atlas", Relation: "works_on", Confidence: 0.8},
	},
	Info: llm.ExtractorInfo{Provider: "anthropic", Model: DefaultModel, PromptVersion: llm.ExtractPromptVersion},
}

var input = llm.ExtractInput{Type: postgram.TypeDocument, Name: "Kickoff notes",
	Content: "Alice Chen kicked off Project Atlas.", Known: []llm.KnownEntity{{Name: "Alice Chen", Type: postgram.TypePerson}}}

func TestExtractSuccess(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		baseURL string // appended to the server URL
		body    string
	}{
		{name: "tool call", body: messageBody("tool_use", toolUse(goodInput))},
		{name: "base URL with /v1", baseURL: "/v1/", body: messageBody("tool_use", toolUse(goodInput))},
		{name: "text before the tool call", body: messageBody("tool_use", text("I'll record the relations."), toolUse(goodInput))},
		{name: "arrays stringified by the model", body: messageBody("tool_use", toolUse(
			`{"entities":"[{\"name\":\"Alice Chen\",\"type\":\"person\"},{\"name\":\"Project Atlas\",\"type\":\"project\"}]",`+
				`"relations":" [{\"source\":\"SELF\",\"target\":\"Alice Chen\",\"relation\":\"involves\",\"confidence\":0.92},`+
				`{\"source\":\"Alice Chen\",\"target\":\"Project Atlas\",\"relation\":\"Works On\",\"confidence\":0.8}]"}`))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, requests := messagesServer(t, reply(http.StatusOK, nil, tt.body))
			x, err := NewExtractor(Config{APIKey: testKey, BaseURL: srv.URL + tt.baseURL, UserAgent: "postgram-test/1"})
			if err != nil {
				t.Fatal(err)
			}
			out, err := x.Extract(context.Background(), input)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(wantExtraction, out); d != "" {
				t.Errorf("extraction (-want +got):\n%s", d)
			}
			reqs := requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			checkRequest(t, reqs[0])
		})
	}
}

// checkRequest checks a Messages API request made by Extract with the
// default configuration.
func checkRequest(t *testing.T, r captured) {
	t.Helper()
	if r.method != http.MethodPost || r.path != "/v1/messages" {
		t.Errorf("request = %s %s, want POST /v1/messages", r.method, r.path)
	}
	gotHeader := map[string]string{}
	for _, k := range []string{"X-Api-Key", "Anthropic-Version", "Content-Type", "User-Agent", "Authorization"} {
		gotHeader[k] = r.header.Get(k)
	}
	wantHeader := map[string]string{"X-Api-Key": testKey, "Anthropic-Version": "2023-06-01", "Content-Type": "application/json",
		"User-Agent": "postgram-test/1", "Authorization": ""}
	if d := cmp.Diff(wantHeader, gotHeader); d != "" {
		t.Errorf("headers (-want +got):\n%s", d)
	}
	b := r.body
	if b["model"] != DefaultModel || b["max_tokens"] != float64(4096) || b["temperature"] != float64(0) {
		t.Errorf("model, max_tokens, temperature = %v, %v, %v", b["model"], b["max_tokens"], b["temperature"])
	}
	if s := blockText(b["system"]); !strings.Contains(s, "knowledge graph") {
		t.Errorf("system = %q, want the extraction instruction", s)
	}
	msgs, _ := b["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("messages = %v, want one user message", msgs)
	}
	m, _ := msgs[0].(map[string]any)
	if c := blockText(m["content"]); m["role"] != "user" || !strings.Contains(c, "Alice Chen (person)") || !strings.Contains(c, "kicked off Project Atlas") {
		t.Errorf("messages[0] = %v", m)
	}
	if d := cmp.Diff(map[string]any{"type": "tool", "name": "graph_extraction"}, b["tool_choice"]); d != "" {
		t.Errorf("tool_choice (-want +got):\n%s", d)
	}
	tools, _ := b["tools"].([]any)
	if len(tools) != 1 {
		t.Fatalf("tools = %v, want one", tools)
	}
	tool, _ := tools[0].(map[string]any)
	schema, _ := tool["input_schema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	if tool["name"] != "graph_extraction" || schema["type"] != "object" || props["relations"] == nil || props["entities"] == nil {
		t.Errorf("tools[0] = %v", tool)
	}
	if d := cmp.Diff([]any{"entities", "relations"}, schema["required"]); d != "" {
		t.Errorf("input_schema.required (-want +got):\n%s", d)
	}
}

// blockText joins the text of a list of content blocks, the form
// anthropic-sdk-go sends system prompts and message contents in.
func blockText(v any) string {
	blocks, _ := v.([]any)
	var sb strings.Builder
	for _, b := range blocks {
		m, _ := b.(map[string]any)
		if t, _ := m["text"].(string); m["type"] == "text" {
			sb.WriteString(t)
		}
	}
	return sb.String()
}

func TestGenerateJSONRequest(t *testing.T) {
	t.Parallel()
	srv, requests := messagesServer(t, reply(http.StatusOK, nil, messageBody("tool_use",
		`{"type":"tool_use","id":"toolu_1","name":"answer","input":{"ok":true}}`)))
	c, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.GenerateJSON(context.Background(), llm.Request{Prompt: "p", Schema: map[string]any{"type": "object"}, MaxTokens: 300})
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != `{"ok":true}` {
		t.Errorf("raw = %s", raw)
	}
	b := requests()[0].body
	if b["model"] != "claude-sonnet-4-5" || b["max_tokens"] != float64(300) {
		t.Errorf("model, max_tokens = %v, %v", b["model"], b["max_tokens"])
	}
	if _, ok := b["system"]; ok {
		t.Errorf("an empty system prompt is sent: %v", b["system"])
	}
	if d := cmp.Diff(map[string]any{"type": "tool", "name": "answer"}, b["tool_choice"]); d != "" {
		t.Errorf("an unnamed schema's tool_choice (-want +got):\n%s", d)
	}
	if c.Info() != (llm.Info{Provider: "anthropic", Model: "claude-sonnet-4-5"}) {
		t.Errorf("Info = %+v", c.Info())
	}
}

func TestExtractFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		respond    func(http.ResponseWriter, *http.Request)
		want       error
		message    string
		retryAfter time.Duration
	}{
		{name: "invalid request", respond: reply(400, nil, apiError("invalid_request_error", "tools.0.input_schema: JSON schema is invalid")),
			want: postgram.ErrLLMFailed, message: "HTTP 400 Bad Request: tools.0.input_schema: JSON schema is invalid (type: invalid_request_error)"},
		{name: "bad key echoed", respond: reply(401, nil, apiError("authentication_error", "invalid x-api-key "+testKey)),
			want: postgram.ErrLLMFailed, message: "invalid x-api-key [REDACTED] (type: authentication_error)"},
		{name: "unknown model", respond: reply(404, nil, apiError("not_found_error", "model: claude-haiku-9")),
			want: postgram.ErrLLMFailed, message: "not_found_error"},
		{name: "rate limited", respond: reply(429, map[string]string{"Retry-After": "20", "Anthropic-Ratelimit-Requests-Remaining": "0"},
			apiError("rate_limit_error", "This request would exceed the rate limit for your organization of 50 output tokens per minute.")),
			want: postgram.ErrRateLimited, message: "rate_limit_error) (retry after 20s)", retryAfter: 20 * time.Second},
		{name: "rate limited without retry-after", respond: reply(429, nil, apiError("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")),
			want: postgram.ErrRateLimited, message: "per-minute rate limit"},
		{name: "overloaded", respond: reply(529, nil, apiError("overloaded_error", "Overloaded")),
			want: postgram.ErrUnavailable, message: "HTTP 529: Overloaded (type: overloaded_error)"},
		{name: "api error", respond: reply(500, nil, apiError("api_error", "Internal server error")),
			want: postgram.ErrUnavailable, message: "HTTP 500 Internal Server Error"},
		{name: "gateway html", respond: reply(502, nil, "<html><body>Bad Gateway</body></html>"),
			want: postgram.ErrUnavailable, message: "Bad Gateway"},
		{name: "timeout", respond: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
			reply(200, nil, messageBody("tool_use", toolUse(goodInput)))(w, r)
		}, want: postgram.ErrUnavailable, message: "no complete response within 100ms"},
		{name: "malformed body", respond: reply(200, nil, `{"id":"msg_01","type":"message","content":[{"type":"tool_use","input":{`),
			want: postgram.ErrLLMFailed, message: "malformed response JSON"},
		{name: "error body with 200", respond: reply(200, nil, apiError("overloaded_error", "Overloaded")),
			want: postgram.ErrLLMFailed, message: "provider error: Overloaded"},
		{name: "truncated", respond: reply(200, nil, messageBody("max_tokens", toolUse(`{"entities":[],"relations":[]}`))),
			want: postgram.ErrLLMFailed, message: "truncated (stop_reason max_tokens)"},
		{name: "context window exceeded", respond: reply(200, nil, messageBody("model_context_window_exceeded", toolUse(`{}`))),
			want: postgram.ErrLLMFailed, message: "truncated (stop_reason model_context_window_exceeded)"},
		{name: "refusal", respond: reply(200, nil, messageBody("refusal", text("Alice"))),
			want: postgram.ErrLLMFailed, message: `refused (stop_reason refusal) after writing "Alice"`},
		{name: "refusal without content", respond: reply(200, nil, messageBody("refusal")),
			want: postgram.ErrLLMFailed, message: "the model refused (stop_reason refusal)"},
		{name: "text instead of the tool", respond: reply(200, nil, messageBody("end_turn", text("I can't help with that request."))),
			want: postgram.ErrLLMFailed, message: "answered in text instead of calling the graph_extraction tool"},
		{name: "another tool", respond: reply(200, nil, messageBody("tool_use", `{"type":"tool_use","id":"toolu_2","name":"web_search","input":{"q":"x"}}`)),
			want: postgram.ErrLLMFailed, message: "no graph_extraction tool call"},
		{name: "tool input not an object", respond: reply(200, nil, messageBody("tool_use", toolUse(`"relations: none"`))),
			want: postgram.ErrLLMFailed, message: "tool input is not a JSON object"},
		{name: "confidence out of range", respond: reply(200, nil, messageBody("tool_use", toolUse(
			`{"entities":[{"name":"Bob","type":"person"}],"relations":[{"source":"SELF","target":"Bob","relation":"involves","confidence":1.7}]}`))),
			want: postgram.ErrLLMFailed, message: "relations[0].confidence 1.7 is not between 0 and 1"},
		{name: "missing relations", respond: reply(200, nil, messageBody("tool_use", toolUse(`{"entities":[]}`))),
			want: postgram.ErrLLMFailed, message: "relations is missing"},
		{name: "unknown entity type", respond: reply(200, nil, messageBody("tool_use", toolUse(`{"entities":[{"name":"Bob","type":"alien"}],"relations":[]}`))),
			want: postgram.ErrLLMFailed, message: `entities[0].type "alien" is not an entity type`},
		{name: "relations stringified but broken", respond: reply(200, nil, messageBody("tool_use", toolUse(`{"entities":[],"relations":"[{\"source\":"}`))),
			want: postgram.ErrLLMFailed, message: "not the extraction schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := messagesServer(t, tt.respond)
			timeout := 10 * time.Second // room for a loaded machine
			if tt.name == "timeout" {
				timeout = 100 * time.Millisecond
			}
			x, err := NewExtractor(Config{APIKey: testKey, BaseURL: srv.URL, Timeout: timeout})
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
			if strings.Contains(err.Error(), testKey) {
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

func TestCanceled(t *testing.T) {
	t.Parallel()
	srv, _ := messagesServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	c, err := New(Config{APIKey: testKey, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.GenerateJSON(ctx, llm.Request{Prompt: "p", SchemaName: "x", Schema: map[string]any{"type": "object"}})
	if !errors.Is(err, postgram.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrUnavailable wrapping context.DeadlineExceeded", err)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	c, err := New(Config{APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if c.base != DefaultBaseURL || c.Info() != (llm.Info{Provider: "anthropic", Model: DefaultModel}) || c.client.Timeout != DefaultTimeout {
		t.Errorf("defaults: base %q, info %+v, timeout %s", c.base, c.Info(), c.client.Timeout)
	}
	tests := []struct {
		cfg   Config
		field string
	}{
		{Config{}, "api_key"},
		{Config{APIKey: "a\nb"}, "api_key"},
		{Config{APIKey: testKey, BaseURL: "api.anthropic.com"}, "base_url"},
		{Config{APIKey: testKey, BaseURL: "https://api.anthropic.com?beta=1"}, "base_url"},
		{Config{APIKey: testKey, Model: " claude-haiku-4-5"}, "model"},
		{Config{APIKey: testKey, Timeout: -time.Second}, "timeout"},
		{Config{APIKey: testKey, UserAgent: "x\r\ny"}, "user_agent"},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg)
		if !errors.Is(err, postgram.ErrInvalidArgument) || postgram.FieldOf(err) != tt.field {
			t.Errorf("New(%+v) = %v, want an invalid %s", tt.cfg, err, tt.field)
		}
		if err != nil && strings.Contains(err.Error(), testKey) {
			t.Errorf("New(%+v): the API key leaked: %v", tt.cfg, err)
		}
	}
}

func TestUnstringify(t *testing.T) {
	t.Parallel()
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"list": map[string]any{"type": "array"}, "obj": map[string]any{"type": "object"}, "name": map[string]any{"type": "string"},
	}}
	tests := []struct{ in, want string }{
		{`{"list":[1],"name":"x"}`, `{"list":[1],"name":"x"}`},
		{`{"list":"[1, 2]","obj":"{\"a\":1}","name":"[not a list]"}`, `{"list":[1,2],"name":"[not a list]","obj":{"a":1}}`},
		{`{"list":"{\"a\":1}"}`, `{"list":"{\"a\":1}"}`}, // an object where an array belongs stays for the schema check
		{`{"list":"[1,"}`, `{"list":"[1,"}`},
		{`{"name":"[1]"}`, `{"name":"[1]"}`},
	}
	for _, tt := range tests {
		if got := string(unstringify(json.RawMessage(tt.in), schema)); got != tt.want {
			t.Errorf("unstringify(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
