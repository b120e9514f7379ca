// Package anthropic implements llm.Model with Anthropic's Messages API:
// the answer's JSON Schema is offered as the only tool and the model is
// made to call it (tool_choice), so the tool call's input is the answer.
// It is built on github.com/anthropics/anthropic-sdk-go/v2, configured only
// from Config (no ANTHROPIC_* variable, profile or config file is read) and
// with the SDK's retries off (postgram's queues retry).
//
// Errors wrap postgram.ErrRateLimited (HTTP 429; the error has a
// RetryAfter() time.Duration method reporting the retry-after header, 0
// when absent), postgram.ErrUnavailable (5xx including 529 overloaded,
// connection failures, timeouts, cancellation) or postgram.ErrLLMFailed
// (any other refusal, a model refusal, a truncated or off-schema answer).
// The API key never appears in an error message.
package anthropic

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/internal/httpjson"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultModel     = "claude-haiku-4-5-20251001"
	DefaultTimeout   = 120 * time.Second
	DefaultMaxTokens = 4096
	// APIVersion is sent as the anthropic-version header (pinned, rather
	// than the SDK's default, so the wire format the tests pin stays put).
	APIVersion = "2023-06-01"
)

// Config configures a Client. Zero fields take the documented defaults.
type Config struct {
	// APIKey is sent as the x-api-key header. Required.
	APIKey string
	// BaseURL is the API root; requests go to BaseURL + "/v1/messages".
	// Default "https://api.anthropic.com".
	BaseURL string
	// Model is the model name. Default "claude-haiku-4-5-20251001".
	Model string
	// Timeout bounds each call, including reading the answer. Default 120s.
	Timeout time.Duration
	// HTTPClient sends the requests. Default: a new client.
	HTTPClient *http.Client
	// UserAgent, if set, is sent as the User-Agent header.
	UserAgent string
}

// Client is a llm.Model. It is safe for concurrent use.
type Client struct {
	api    sdk.MessageService
	base   string // the API root without /v1
	model  string
	client *httpjson.Client
}

// New validates cfg and returns a Client. It makes no network call.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	base, err := httpjson.CleanBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, invalid("base_url", "%v", err)
	}
	switch {
	case cfg.APIKey == "":
		return nil, invalid("api_key", "is required (ANTHROPIC_API_KEY)")
	case httpjson.HasControl(cfg.APIKey):
		return nil, invalid("api_key", "must not contain control characters or newlines")
	case strings.TrimSpace(cfg.Model) != cfg.Model:
		return nil, invalid("model", "must not have leading or trailing spaces")
	case cfg.Timeout < 0:
		return nil, invalid("timeout", "must be positive, got %s", cfg.Timeout)
	case httpjson.HasControl(cfg.UserAgent):
		return nil, invalid("user_agent", "must not contain control characters or newlines")
	}
	const maxBody = 16 << 20
	opts := []option.RequestOption{
		option.WithBaseURL(strings.TrimSuffix(base, "/v1") + "/"),
		// The key goes in x-api-key, the Messages API's documented header
		// (this SDK's WithAPIKey sends it as a bearer token).
		option.WithHeader("X-Api-Key", cfg.APIKey),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0), // postgram's queues retry
		// An explicit per-request timeout; without it the SDK derives one
		// from max_tokens and refuses large non-streaming requests. The
		// per-call timeout below is what bounds a call.
		option.WithRequestTimeout(cfg.Timeout),
		option.WithHeader("anthropic-version", APIVersion),
		option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			resp, err := next(req)
			httpjson.LimitBody(resp, maxBody)
			return resp, err
		}),
	}
	if cfg.UserAgent != "" {
		opts = append(opts, option.WithHeader("User-Agent", cfg.UserAgent))
	}
	return &Client{
		// The service is built from explicit options only (not with
		// anthropic.NewClient), so the SDK reads no ANTHROPIC_* variable,
		// profile or config file.
		api:   sdk.NewMessageService(opts...),
		base:  strings.TrimSuffix(base, "/v1"),
		model: cfg.Model,
		client: &httpjson.Client{Prefix: "anthropic messages", HTTPClient: cfg.HTTPClient, Timeout: cfg.Timeout,
			MaxBody: maxBody, Secret: cfg.APIKey, Failure: postgram.ErrLLMFailed},
	}, nil
}

// NewExtractor returns a relation extractor backed by the model.
func NewExtractor(cfg Config) (*llm.ModelExtractor, error) {
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return llm.NewExtractor(c), nil
}

// Info implements llm.Model.
func (c *Client) Info() llm.Info {
	return llm.Info{Provider: "anthropic", Model: c.model}
}

type response struct {
	Type    string `json:"type"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason string          `json:"stop_reason"`
	Error      json.RawMessage `json:"error"`
}

// GenerateJSON implements llm.Model.
func (c *Client) GenerateJSON(ctx context.Context, req llm.Request) (json.RawMessage, error) {
	name := req.SchemaName
	if name == "" {
		name = "answer"
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	params := sdk.MessageNewParams{
		Model:      sdk.Model(c.model),
		MaxTokens:  int64(maxTokens),
		Messages:   []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock(req.Prompt))},
		Tools:      []sdk.ToolUnionParam{tool(name, req.Schema)},
		ToolChoice: sdk.ToolChoiceParamOfTool(name),
	}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	var resp response
	send := func(ctx context.Context) ([]byte, error) {
		var raw []byte
		// The Messages API takes a temperature this SDK version's
		// params do not model; 0 keeps extraction deterministic.
		_, err := c.api.New(ctx, params, option.WithJSONSet("temperature", 0), option.WithResponseBodyInto(&raw))
		var apiErr *sdk.Error
		if errors.As(err, &apiErr) && apiErr.Response != nil {
			return nil, httpjson.FromResponse(apiErr.Response)
		}
		return raw, err
	}
	if err := c.client.Call(ctx, send, &resp); err != nil {
		return nil, err
	}
	if msg := httpjson.ErrorText(resp.Error); msg != "" {
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "provider error: %s", msg)
	}
	var text strings.Builder
	for _, b := range resp.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	switch resp.StopReason {
	case "max_tokens", "model_context_window_exceeded":
		// The tool input is cut off (or absent): never use it.
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "the answer was truncated (stop_reason %s); raise the token limit or shorten the input", resp.StopReason)
	case "refusal":
		// Content, if any, is the partial output before the refusal,
		// not an explanation.
		if t := strings.TrimSpace(text.String()); t != "" {
			return nil, c.client.Errorf(postgram.ErrLLMFailed, "the model refused (stop_reason refusal) after writing %q", httpjson.Excerpt(t))
		}
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "the model refused (stop_reason refusal)")
	}
	for _, b := range resp.Content {
		if b.Type != "tool_use" || b.Name != name {
			continue
		}
		if out, ok := httpjson.JSONAnswer(string(b.Input)); ok && strings.HasPrefix(string(out), "{") {
			return unstringify(out, req.Schema), nil
		}
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "the tool input is not a JSON object: %q", httpjson.Excerpt(string(b.Input)))
	}
	if text.Len() > 0 {
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "the model answered in text instead of calling the %s tool: %q", name, httpjson.Excerpt(text.String()))
	}
	return nil, c.client.Errorf(postgram.ErrLLMFailed, "the answer has no %s tool call (stop_reason %q)", name, resp.StopReason)
}

// tool offers the answer's JSON Schema as the only tool.
func tool(name string, schema map[string]any) sdk.ToolUnionParam {
	in := sdk.ToolInputSchemaParam{Properties: schema["properties"]}
	switch req := schema["required"].(type) {
	case []string:
		in.Required = req
	case []any:
		for _, r := range req {
			if s, ok := r.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	}
	for k, v := range schema {
		if k == "type" || k == "properties" || k == "required" {
			continue
		}
		if in.ExtraFields == nil {
			in.ExtraFields = map[string]any{}
		}
		in.ExtraFields[k] = v
	}
	t := sdk.ToolUnionParamOfTool(in, name)
	t.OfTool.Description = sdk.String("Record the answer.")
	return t
}

// unstringify repairs a known quirk of Claude's tool calls: a property the
// schema declares as an array or object sometimes arrives as a string
// holding that array's or object's JSON. Only top-level properties are
// repaired; anything else is returned unchanged for the caller's schema
// check to judge.
func unstringify(input json.RawMessage, schema map[string]any) json.RawMessage {
	props, _ := schema["properties"].(map[string]any)
	if len(props) == 0 {
		return input
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(input, &obj) != nil {
		return input
	}
	changed := false
	for k, v := range obj {
		p, _ := props[k].(map[string]any)
		want, _ := p["type"].(string)
		open := map[string]byte{"array": '[', "object": '{'}[want]
		var str string
		if open == 0 || json.Unmarshal(v, &str) != nil {
			continue
		}
		inner := strings.TrimSpace(str)
		if inner == "" || inner[0] != open || !json.Valid([]byte(inner)) {
			continue
		}
		obj[k] = json.RawMessage(inner)
		changed = true
	}
	if !changed {
		return input
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return input
	}
	return out
}

// invalid builds a configuration error naming the field.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("anthropic: %w", &postgram.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}
