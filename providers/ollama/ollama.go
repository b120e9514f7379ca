// Package ollama implements postgram.Embedder for an Ollama server's
// /api/embed endpoint and llm.Model (Chat) for its /api/chat endpoint
// with a JSON Schema as "format". It is built on github.com/ollama/ollama/api
// with an explicit server URL (OLLAMA_HOST is not read). One variable of the
// Ollama client remains in effect: with OLLAMA_AUTH set (or a server on
// ollama.com) it signs requests with the key in ~/.ollama before they are
// sent; the configured APIKey still replaces the signature's header.
//
// Errors wrap postgram.ErrRateLimited (HTTP 429; the error has a
// RetryAfter() time.Duration method reporting Retry-After, 0 when absent),
// postgram.ErrUnavailable (5xx, connection failures, timeouts,
// cancellation) or, for any other refusal such as an unknown model and for
// malformed, inconsistent or truncated answers, postgram.ErrEmbeddingFailed
// (Embedder) or postgram.ErrLLMFailed (Chat). The API key, if any, never
// appears in an error message.
package ollama

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/internal/httpjson"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultBaseURL    = "http://127.0.0.1:11434"
	DefaultModel      = "bge-m3"
	DefaultDimensions = 1024 // for bge-m3 only
	DefaultTimeout    = 15 * time.Second
	DefaultMaxBatch   = 64
)

// maxResponseBody bounds how much of a response is read.
const maxResponseBody = 64 << 20 // 64 MiB

// Config configures an Embedder. Zero fields take the documented defaults.
type Config struct {
	// BaseURL is the server root; requests go to BaseURL + "/api/embed".
	// Default "http://127.0.0.1:11434". Must be an absolute http(s) URL.
	BaseURL string
	// Model is the embedding model name. Default "bge-m3".
	Model string
	// Dimensions is the vector length, used to check responses. Default
	// 1024 for bge-m3 (also "bge-m3:<tag>"); required for any other model.
	Dimensions int
	// Timeout bounds each HTTP call, including reading the response.
	// Default 15s. Note that Ollama loads a model on first use, which can
	// take longer than the default on slow machines.
	Timeout time.Duration
	// MaxBatch is the maximum number of inputs per request; larger batches
	// are split into several sequential requests. Default 64.
	MaxBatch int
	// HTTPClient sends the requests. Default: a new client using
	// http.DefaultTransport.
	HTTPClient *http.Client
	// APIKey, if set, is sent as "Authorization: Bearer <APIKey>" (for an
	// Ollama behind an authenticating proxy). Optional.
	APIKey string
}

// Embedder embeds texts with Ollama. It is safe for concurrent use.
type Embedder struct {
	api      *api.Client
	base     string // the server root; requests go to base + "/api/embed"
	model    string
	dims     int
	maxBatch int
	client   *httpjson.Client
}

// New validates cfg, applies defaults and returns an Embedder. Invalid
// configuration yields an error wrapping postgram.ErrInvalidArgument (a
// *postgram.FieldError naming the field). New makes no network call.
func New(cfg Config) (*Embedder, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Dimensions == 0 && (cfg.Model == DefaultModel || strings.HasPrefix(cfg.Model, DefaultModel+":")) {
		cfg.Dimensions = DefaultDimensions
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = DefaultMaxBatch
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
	case cfg.Dimensions == 0:
		return nil, invalid("dimensions", "required for model %q (a default exists only for %s)", cfg.Model, DefaultModel)
	case cfg.Dimensions < 0:
		return nil, invalid("dimensions", "must be positive, got %d", cfg.Dimensions)
	case cfg.Timeout < 0:
		return nil, invalid("timeout", "must be positive, got %s", cfg.Timeout)
	case cfg.MaxBatch < 0:
		return nil, invalid("max_batch", "must be positive, got %d", cfg.MaxBatch)
	case httpjson.HasControl(cfg.APIKey):
		return nil, invalid("api_key", "must not contain control characters or newlines")
	}

	sdk, err := newAPI(base, cfg.HTTPClient, cfg.APIKey, maxResponseBody)
	if err != nil {
		return nil, err
	}
	return &Embedder{
		api:      sdk,
		base:     base,
		model:    cfg.Model,
		dims:     cfg.Dimensions,
		maxBatch: cfg.MaxBatch,
		client: &httpjson.Client{
			Prefix:     "ollama embeddings",
			HTTPClient: cfg.HTTPClient,
			Timeout:    cfg.Timeout,
			MaxBody:    maxResponseBody,
			Secret:     cfg.APIKey,
		},
	}, nil
}

// Model describes the configured model; Provider is "ollama".
func (e *Embedder) Model() postgram.ModelInfo {
	return postgram.ModelInfo{Provider: "ollama", Name: e.model, Dimensions: e.dims}
}

// MaxBatch returns the maximum number of inputs sent per request. It
// implements postgram.MaxBatcher.
func (e *Embedder) MaxBatch() int { return e.maxBatch }

// EmbedBatch returns one vector per text, in input order. Inputs larger than
// MaxBatch are sent as several sequential requests; the first failure aborts
// the call. An empty input returns nil without a request.
func (e *Embedder) EmbedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	return httpjson.Batched(ctx, texts, e.maxBatch, e.embed)
}

// response is the body of a successful POST /api/embed.
type response struct {
	Model      string      `json:"model"`
	Embeddings [][]float32 `json:"embeddings"`
	// Error is not expected with a 2xx status but is checked anyway.
	Error json.RawMessage `json:"error"`
}

// embed sends one request for at most maxBatch texts.
func (e *Embedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	var resp response
	send := func(ctx context.Context) ([]byte, error) {
		ctx, answer := httpjson.WithCapture(ctx)
		_, err := e.api.Embed(ctx, &api.EmbedRequest{Model: e.model, Input: texts})
		return answer.Result(err)
	}
	if err := e.client.Call(ctx, send, &resp); err != nil {
		return nil, err
	}
	if msg := httpjson.ErrorText(resp.Error); msg != "" {
		return nil, e.client.Errorf(postgram.ErrEmbeddingFailed, "provider error: %s", msg)
	}
	if len(resp.Embeddings) != len(texts) {
		return nil, e.client.Errorf(postgram.ErrEmbeddingFailed, "got %d embeddings for %d inputs", len(resp.Embeddings), len(texts))
	}
	for i, v := range resp.Embeddings {
		if len(v) != e.dims {
			return nil, e.client.Errorf(postgram.ErrEmbeddingFailed, "embedding for input %d has %d dimensions, want %d", i, len(v), e.dims)
		}
	}
	return resp.Embeddings, nil
}

// newAPI builds the Ollama client explicitly (api.NewClient, not
// api.ClientFromEnvironment, so OLLAMA_HOST is never read). Its transport
// sends the configured key as a bearer token, bounds response bodies and
// keeps the status, headers and body of every answer, which the SDK's
// errors do not carry (Retry-After, the provider's message). The SDK
// retries nothing.
func newAPI(base string, hc *http.Client, apiKey string, maxBody int64) (*api.Client, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, invalid("base_url", "not a valid URL")
	}
	return api.NewClient(u, httpjson.Capturing(hc, apiKey, maxBody)), nil
}

// invalid builds a configuration error naming the field.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("ollama: %w", &postgram.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}
