package ollama

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/internal/httpjson"
)

// Chat defaults.
const (
	DefaultChatModel   = "llama3.2"
	DefaultChatTimeout = 120 * time.Second
)

// ChatConfig configures a Chat client. Zero fields take the documented
// defaults.
type ChatConfig struct {
	// BaseURL is the Ollama server; requests go to BaseURL + "/api/chat".
	// Default "http://127.0.0.1:11434".
	BaseURL string
	// Model is the chat model. Default "llama3.2".
	Model string
	// APIKey, if set, is sent as "Authorization: Bearer <APIKey>".
	APIKey string
	// ReasoningEffort, when set (minimal, low, medium, high), is sent as
	// "think" for reasoning models (minimal turns thinking off).
	ReasoningEffort string
	// ContextLength, when positive, is sent as options.num_ctx. Ollama's
	// default context (2048 or 4096 tokens, by version and server
	// settings) silently drops the start of a longer prompt; extraction
	// prompts run to about 8k tokens for long content. Zero keeps the
	// server's default.
	ContextLength int
	// Timeout bounds each call. Default 120s (a model may need loading).
	Timeout time.Duration
	// HTTPClient sends the requests. Default: a new client.
	HTTPClient *http.Client
}

// Chat is a llm.Model backed by Ollama's /api/chat with a JSON Schema
// as "format" (structured output). It is safe for concurrent use.
type Chat struct {
	api    *api.Client
	base   string // the server root; requests go to base + "/api/chat"
	model  string
	think  *api.ThinkValue
	numCtx int
	client *httpjson.Client
}

// NewChat validates cfg and returns a Chat. It makes no network call.
func NewChat(cfg ChatConfig) (*Chat, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.Model == "" {
		cfg.Model = DefaultChatModel
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultChatTimeout
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
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
	case cfg.ContextLength < 0:
		return nil, invalid("context_length", "must be positive, got %d", cfg.ContextLength)
	case cfg.Timeout < 0:
		return nil, invalid("timeout", "must be positive, got %s", cfg.Timeout)
	case httpjson.HasControl(cfg.APIKey):
		return nil, invalid("api_key", "must not contain control characters or newlines")
	}
	var think *api.ThinkValue
	switch cfg.ReasoningEffort {
	case "":
	case "minimal":
		think = &api.ThinkValue{Value: false}
	case "low", "medium", "high":
		think = &api.ThinkValue{Value: cfg.ReasoningEffort}
	default:
		return nil, invalid("reasoning_effort", "%q is not one of minimal, low, medium, high", cfg.ReasoningEffort)
	}
	const maxBody = 16 << 20
	sdk, err := newAPI(base, cfg.HTTPClient, cfg.APIKey, maxBody)
	if err != nil {
		return nil, err
	}
	return &Chat{
		api:    sdk,
		base:   base,
		model:  cfg.Model,
		think:  think,
		numCtx: cfg.ContextLength,
		client: &httpjson.Client{Prefix: "ollama chat", HTTPClient: cfg.HTTPClient, Timeout: cfg.Timeout,
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
func (c *Chat) Info() llm.Info { return llm.Info{Provider: "ollama", Model: c.model} }

type chatResponse struct {
	Model   string `json:"model"`
	Message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
	Done       bool            `json:"done"`
	DoneReason string          `json:"done_reason"`
	Error      json.RawMessage `json:"error"`
}

// GenerateJSON implements llm.Model.
func (c *Chat) GenerateJSON(ctx context.Context, req llm.Request) (json.RawMessage, error) {
	opts := map[string]any{"temperature": 0}
	if req.MaxTokens > 0 {
		opts["num_predict"] = req.MaxTokens
	}
	if c.numCtx > 0 {
		opts["num_ctx"] = c.numCtx
	}
	format := json.RawMessage(`"json"`) // JSON mode when there is no schema
	if req.Schema != nil {
		b, err := json.Marshal(req.Schema)
		if err != nil {
			return nil, c.client.Errorf(postgram.ErrLLMFailed, "encoding the schema: %v", err)
		}
		format = b
	}
	stream := false
	body := &api.ChatRequest{
		Model: c.model,
		Messages: []api.Message{
			{Role: "system", Content: req.System},
			{Role: "user", Content: req.Prompt},
		},
		Stream:  &stream,
		Format:  format,
		Think:   c.think,
		Options: opts,
	}
	send := func(ctx context.Context) ([]byte, error) {
		ctx, answer := httpjson.WithCapture(ctx)
		err := c.api.Chat(ctx, body, func(api.ChatResponse) error { return nil })
		return answer.Result(err)
	}
	var resp chatResponse
	if err := c.client.Call(ctx, send, &resp); err != nil {
		return nil, err
	}
	if msg := httpjson.ErrorText(resp.Error); msg != "" {
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "provider error: %s", msg)
	}
	if resp.DoneReason == "length" {
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "the answer was truncated (done_reason length); raise the token limit or shorten the input")
	}
	out, ok := httpjson.JSONAnswer(resp.Message.Content)
	if !ok {
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "the answer is not JSON: %q", httpjson.Excerpt(resp.Message.Content))
	}
	if !strings.HasPrefix(string(out), "{") {
		// Models without structured output sometimes answer with prose
		// quoted as a JSON string: a refusal in all but name.
		return nil, c.client.Errorf(postgram.ErrLLMFailed, "the answer is not a JSON object: %q", httpjson.Excerpt(resp.Message.Content))
	}
	return out, nil
}
