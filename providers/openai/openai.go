// Package openai implements postgram.Embedder for the OpenAI embeddings API
// and llm.Model (Chat) for the chat completions API with JSON-schema
// structured output, for OpenAI and for servers that speak the same wire
// format (vLLM, LiteLLM, LocalAI, llama.cpp server, ...). It is built on
// github.com/openai/openai-go/v3, configured only from Config: the SDK's
// environment variables (OPENAI_API_KEY, OPENAI_BASE_URL, ...) are never
// read and the SDK never retries (postgram's queues do).
//
// Errors wrap postgram.ErrRateLimited (HTTP 429; the error has a
// RetryAfter() time.Duration method reporting retry-after-ms or
// Retry-After, 0 when absent), postgram.ErrUnavailable (5xx, connection
// failures, timeouts, cancellation) or, for any other refusal and for
// malformed, inconsistent, refused or truncated answers,
// postgram.ErrEmbeddingFailed (Embedder) or postgram.ErrLLMFailed (Chat).
// The API key never appears in an error message.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/internal/httpjson"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultBaseURL    = "https://api.openai.com/v1"
	DefaultModel      = "text-embedding-3-small"
	DefaultDimensions = 1536 // for text-embedding-3-* models only
	DefaultTimeout    = 15 * time.Second
	DefaultMaxBatch   = 256
)

// maxResponseBody bounds how much of a response is read.
const maxResponseBody = 64 << 20 // 64 MiB

// Config configures an Embedder. Zero fields take the documented defaults.
type Config struct {
	// APIKey is sent as "Authorization: Bearer <APIKey>". It may be empty
	// for OpenAI-compatible servers that need no authentication.
	APIKey string
	// BaseURL is the API root; requests go to BaseURL + "/embeddings".
	// Default "https://api.openai.com/v1". Must be an absolute http(s) URL.
	BaseURL string
	// Model is the embedding model name. Default "text-embedding-3-small".
	Model string
	// Dimensions is the vector length. Default 1536 for text-embedding-3-*
	// models, for which it is also sent as the "dimensions" request
	// parameter; required for any other model, for which it is only used to
	// check responses.
	Dimensions int
	// Timeout bounds each HTTP call, including reading the response.
	// Default 15s.
	Timeout time.Duration
	// MaxBatch is the maximum number of inputs per request; larger batches
	// are split into several sequential requests. Default 256.
	MaxBatch int
	// HTTPClient sends the requests. Default: a new client using
	// http.DefaultTransport.
	HTTPClient *http.Client
	// UserAgent, if set, is sent as the User-Agent header; otherwise Go's
	// default is sent.
	UserAgent string
}

// Embedder embeds texts with an OpenAI-compatible embeddings endpoint. It is
// safe for concurrent use.
type Embedder struct {
	api      oa.EmbeddingService
	model    string
	dims     int
	sendDims bool
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
	sendDims := acceptsDimensions(cfg.Model)
	if cfg.Dimensions == 0 && sendDims {
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
		return nil, invalid("dimensions", "required for model %q (defaults exist only for text-embedding-3-* models)", cfg.Model)
	case cfg.Dimensions < 0:
		return nil, invalid("dimensions", "must be positive, got %d", cfg.Dimensions)
	case cfg.Timeout < 0:
		return nil, invalid("timeout", "must be positive, got %s", cfg.Timeout)
	case cfg.MaxBatch < 0:
		return nil, invalid("max_batch", "must be positive, got %d", cfg.MaxBatch)
	case httpjson.HasControl(cfg.APIKey):
		return nil, invalid("api_key", "must not contain control characters or newlines")
	case httpjson.HasControl(cfg.UserAgent):
		return nil, invalid("user_agent", "must not contain control characters or newlines")
	}

	return &Embedder{
		api:      oa.NewEmbeddingService(sdkOptions(base, cfg.APIKey, cfg.UserAgent, cfg.HTTPClient, maxResponseBody)...),
		model:    cfg.Model,
		dims:     cfg.Dimensions,
		sendDims: sendDims,
		maxBatch: cfg.MaxBatch,
		client: &httpjson.Client{
			Prefix:     "openai embeddings",
			HTTPClient: cfg.HTTPClient,
			Timeout:    cfg.Timeout,
			MaxBody:    maxResponseBody,
			Secret:     cfg.APIKey,
		},
	}, nil
}

// Model describes the configured model; Provider is "openai".
func (e *Embedder) Model() postgram.ModelInfo {
	return postgram.ModelInfo{Provider: "openai", Name: e.model, Dimensions: e.dims}
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

// response is the body of a successful POST /embeddings.
type response struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
	// Error is set by some compatible servers even with a 2xx status.
	Error json.RawMessage `json:"error"`
}

// embed sends one request for at most maxBatch texts.
func (e *Embedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	params := oa.EmbeddingNewParams{
		Model:          e.model,
		Input:          oa.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		EncodingFormat: oa.EmbeddingNewParamsEncodingFormatFloat,
	}
	if e.sendDims {
		params.Dimensions = oa.Int(int64(e.dims))
	}
	var resp response
	send := func(ctx context.Context) ([]byte, error) {
		var raw []byte
		_, err := e.api.New(ctx, params, option.WithResponseBodyInto(&raw))
		return raw, sdkError(err)
	}
	if err := e.client.Call(ctx, send, &resp); err != nil {
		return nil, err
	}
	if msg := httpjson.ErrorText(resp.Error); msg != "" {
		return nil, e.client.Errorf(postgram.ErrEmbeddingFailed, "provider error: %s", msg)
	}
	if len(resp.Data) != len(texts) {
		return nil, e.client.Errorf(postgram.ErrEmbeddingFailed, "got %d embeddings for %d inputs", len(resp.Data), len(texts))
	}
	vecs := make([][]float32, len(texts))
	for i, d := range resp.Data {
		switch {
		case d.Index < 0 || d.Index >= len(texts):
			return nil, e.client.Errorf(postgram.ErrEmbeddingFailed, "data[%d] has index %d, want 0..%d", i, d.Index, len(texts)-1)
		case vecs[d.Index] != nil:
			return nil, e.client.Errorf(postgram.ErrEmbeddingFailed, "data[%d] repeats index %d", i, d.Index)
		case len(d.Embedding) != e.dims:
			return nil, e.client.Errorf(postgram.ErrEmbeddingFailed, "embedding for input %d has %d dimensions, want %d", d.Index, len(d.Embedding), e.dims)
		}
		vecs[d.Index] = d.Embedding
	}
	return vecs, nil
}

// sdkOptions configures an openai-go service explicitly: base URL, key,
// HTTP client, no SDK retries (postgram's queues retry) and a bounded
// response body. The services are built without openai.NewClient, so the
// SDK never reads OPENAI_API_KEY, OPENAI_BASE_URL or any other variable.
func sdkOptions(base, apiKey, userAgent string, hc *http.Client, maxBody int64) []option.RequestOption {
	opts := []option.RequestOption{
		option.WithBaseURL(base + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			resp, err := next(req)
			httpjson.LimitBody(resp, maxBody)
			return resp, err
		}),
	}
	if apiKey != "" {
		opts = append(opts, option.WithAPIKey(apiKey))
	}
	if userAgent != "" {
		opts = append(opts, option.WithHeader("User-Agent", userAgent))
	}
	return opts
}

// sdkError turns the SDK's error for a non-2xx answer into the form
// httpjson classifies; other errors pass unchanged.
func sdkError(err error) error {
	var apiErr *oa.Error
	if errors.As(err, &apiErr) && apiErr.Response != nil {
		return httpjson.FromResponse(apiErr.Response)
	}
	return err
}

// acceptsDimensions reports whether the model takes the "dimensions"
// request parameter.
func acceptsDimensions(model string) bool {
	return strings.HasPrefix(model, "text-embedding-3-")
}

// invalid builds a configuration error naming the field.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("openai: %w", &postgram.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}
