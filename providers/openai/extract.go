package openai

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/internal/httpjson"
)

// Chat defaults.
const (
	DefaultChatModel   = "gpt-4o-mini"
	DefaultChatTimeout = 120 * time.Second
)

// ChatConfig configures a Chat client. Zero fields take the documented
// defaults.
type ChatConfig struct {
	// APIKey is sent as "Authorization: Bearer <APIKey>". Required for
	// api.openai.com; it may be empty for OpenAI-compatible servers that
	// need none.
	APIKey string
	// BaseURL is the API root including any /v1; requests go to
	// BaseURL + "/chat/completions". Default "https://api.openai.com/v1".
	BaseURL string
	// Model is the chat model. Default "gpt-4o-mini".
	Model string
	// Provider is recorded as the provenance of what the model produces:
	// "openai" (default) or "openai-compatible".
	Provider string
	// Compatible selects the wire dialect of OpenAI-compatible servers
	// (vLLM, LiteLLM, llama.cpp, LocalAI): "max_tokens" instead of
	// "max_completion_tokens". Default true when Provider is
	// "openai-compatible".
	Compatible *bool
	// ReasoningEffort, when set (minimal, low, medium, high), is sent as
	// reasoning_effort, for reasoning models.
	ReasoningEffort string
	// Timeout bounds each call, including reading the answer. Default 120s.
	Timeout time.Duration
	// HTTPClient sends the requests. Default: a new client.
	HTTPClient *http.Client
	// UserAgent, if set, is sent as the User-Agent header.
	UserAgent string
}

// Chat is a llm.Model backed by the chat completions API with
// JSON-schema structured output (response_format json_schema, strict). It
// is safe for concurrent use.
type Chat struct {
	api        oa.ChatCompletionService
	base       string // the API root; requests go to base + "/chat/completions"
	model      string
	provider   string
	compatible bool
	effort     string
	client     *httpjson.Client
}

// NewChat validates cfg and returns a Chat. It makes no network call.
func NewChat(cfg ChatConfig) (*Chat, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.Model == "" {
		cfg.Model = DefaultChatModel
	}
	if cfg.Provider == "" {
		cfg.Provider = "openai"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultChatTimeout
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	compatible := cfg.Provider == "openai-compatible"
	if cfg.Compatible != nil {
		compatible = *cfg.Compatible
	}
	base, err := httpjson.CleanBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, invalid("base_url", "%v", err)
	}
	switch {
	case strings.TrimSpace(cfg.Model) != cfg.Model:
		return nil, invalid("model", "must not have leading or trailing spaces")
	case httpjson.HasControl(cfg.Model):
		return nil, invalid("model", "must not contain control characters or newlines")
	case !validProvider(cfg.Provider):
		return nil, invalid("provider", "%q is not a provider name (letters, digits, '.', '_' and '-'; e.g. openai or openai-compatible)", cfg.Provider)
	case cfg.APIKey == "" && isOpenAIHost(base):
		return nil, invalid("api_key", "is required for %s (OPENAI_API_KEY)", base)
	case cfg.Timeout < 0:
		return nil, invalid("timeout", "must be positive, got %s", cfg.Timeout)
	case httpjson.HasControl(cfg.APIKey):
		return nil, invalid("api_key", "must not contain control characters or newlines")
	case httpjson.HasControl(cfg.UserAgent):
		return nil, invalid("user_agent", "must not contain control characters or newlines")
	}
	switch cfg.ReasoningEffort {
	case "", "minimal", "low", "medium", "high":
	default:
		return nil, invalid("reasoning_effort", "%q is not one of minimal, low, medium, high", cfg.ReasoningEffort)
	}
	const maxBody = 16 << 20
	return &Chat{
		base:       base,
		api:        oa.NewChatCompletionService(sdkOptions(base, cfg.APIKey, cfg.UserAgent, cfg.HTTPClient, maxBody)...),
		model:      cfg.Model,
		provider:   cfg.Provider,
		compatible: compatible,
		effort:     cfg.ReasoningEffort,
		client: &httpjson.Client{Prefix: cfg.Provider + " chat", HTTPClient: cfg.HTTPClient, Timeout: cfg.Timeout,
			MaxBody: maxBody, Secret: cfg.APIKey, Failure: postgram.ErrLLMFailed},
	}, nil
}

// NewExtractor returns a relation extractor backed by the chat model.
func NewExtractor(cfg ChatConfig) (*llm.ModelExtractor, error) {
	c, err := NewChat(cfg)
	if err != nil {
		return nil, err
	}
	return llm.NewExtractor(c), nil
}

// Info implements llm.Model.
func (c *Chat) Info() llm.Info { return llm.Info{Provider: c.provider, Model: c.model} }

type chatResponse struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Error json.RawMessage `json:"error"`
}

// GenerateJSON implements llm.Model.
func (c *Chat) GenerateJSON(ctx context.Context, req llm.Request) (json.RawMessage, error) {
	name := req.SchemaName
	if name == "" {
		name = "answer" // json_schema.name is required
	}
	params := oa.ChatCompletionNewParams{
		Model: c.model,
		Messages: []oa.ChatCompletionMessageParamUnion{
			oa.SystemMessage(req.System),
			oa.UserMessage(req.Prompt),
		},
	}
	if req.Schema != nil {
		params.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: name, Strict: oa.Bool(true), Schema: req.Schema},
		}
	} else {
		// strict mode rejects a null schema
		params.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
	}
	if c.effort != "" {
		params.ReasoningEffort = shared.ReasoningEffort(c.effort)
	} else if !isReasoningModel(c.model) {
		params.Temperature = oa.Float(0)
	}
	if req.MaxTokens > 0 {
		if c.compatible {
			params.MaxTokens = oa.Int(int64(req.MaxTokens))
		} else {
			params.MaxCompletionTokens = oa.Int(int64(req.MaxTokens))
		}
	}
	send := func(ctx context.Context) ([]byte, error) {
		var raw []byte
		_, err := c.api.New(ctx, params, option.WithResponseBodyInto(&raw))
		return raw, sdkError(err)
	}
	var resp chatResponse
	if err := c.client.Call(ctx, send, &resp); err != nil {
		return nil, err
	}
	if msg := httpjson.ErrorText(resp.Error); msg != "" {
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "provider error: %s", msg)
	}
	if len(resp.Choices) == 0 {
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "the answer has no choices")
	}
	ch := resp.Choices[0]
	if ch.Message.Refusal != nil && strings.TrimSpace(*ch.Message.Refusal) != "" {
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "the model refused: %s", httpjson.Excerpt(*ch.Message.Refusal))
	}
	switch ch.FinishReason {
	case "length":
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "the answer was truncated (finish_reason length); raise the token limit or shorten the input")
	case "content_filter":
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "the answer was withheld by the provider's content filter")
	}
	if ch.Message.Content == nil {
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "the answer has no content")
	}
	out, ok := httpjson.JSONAnswer(*ch.Message.Content)
	if !ok || !strings.HasPrefix(string(out), "{") {
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "the answer is not JSON: %q", httpjson.Excerpt(*ch.Message.Content))
	}
	return out, nil
}

// validProvider reports a provenance label: 1 to 64 letters, digits, '.',
// '_' or '-'.
func validProvider(p string) bool {
	if p == "" || len(p) > 64 {
		return false
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// isOpenAIHost reports whether base is OpenAI's own API, which needs a key.
func isOpenAIHost(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// isReasoningModel reports models that reject a temperature.
func isReasoningModel(m string) bool {
	m = strings.ToLower(m)
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-oss"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}
