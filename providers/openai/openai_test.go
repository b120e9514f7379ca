package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/openai"
)

// Compile-time checks.
var (
	_ postgram.Embedder   = (*openai.Embedder)(nil)
	_ postgram.MaxBatcher = (*openai.Embedder)(nil)
)

const testKey = "sk-test-0123456789abcdef"

// wireRequest is what the fake server decodes; Dimensions is a pointer so
// tests can tell "absent" from "zero".
type wireRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     *int     `json:"dimensions"`
}

type wireDatum struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float32 `json:"embedding"`
}

type wireResponse struct {
	Object string      `json:"object"`
	Data   []wireDatum `json:"data"`
	Model  string      `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// recorded is one request as seen by the fake server.
type recorded struct {
	Method string
	Path   string
	Header http.Header
	Raw    map[string]json.RawMessage
	Body   wireRequest
}

// fakeVector is the deterministic vector the fake server returns for text.
func fakeVector(text string, dims int) []float32 {
	var h uint32 = 7
	for i := 0; i < len(text); i++ {
		h = h*31 + uint32(text[i])
	}
	v := make([]float32, dims)
	for j := range v {
		v[j] = float32(h%1000) + float32(j)/100
	}
	return v
}

func fakeVectors(texts []string, dims int) [][]float32 {
	out := make([][]float32, len(texts))
	for i, s := range texts {
		out[i] = fakeVector(s, dims)
	}
	return out
}

// fakeServer speaks the OpenAI embeddings wire format and records requests.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

// newFakeServer starts a server. respond builds the answer for one decoded
// request; nil means a correct answer with data in reverse index order.
func newFakeServer(t *testing.T, dims int, respond func(w http.ResponseWriter, req wireRequest)) *fakeServer {
	t.Helper()
	if respond == nil {
		respond = func(w http.ResponseWriter, req wireRequest) {
			writeJSON(w, http.StatusOK, okResponse(req, dims, true))
		}
	}
	fs := &fakeServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec := recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()}
		if err := json.Unmarshal(body, &rec.Raw); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": "bad json: " + err.Error(), "type": "invalid_request_error"}})
			return
		}
		if err := json.Unmarshal(body, &rec.Body); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": "bad body: " + err.Error(), "type": "invalid_request_error"}})
			return
		}
		fs.mu.Lock()
		fs.reqs = append(fs.reqs, rec)
		fs.mu.Unlock()
		respond(w, rec.Body)
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *fakeServer) requests() []recorded {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]recorded(nil), fs.reqs...)
}

// okResponse answers req correctly, optionally listing data in reverse.
func okResponse(req wireRequest, dims int, reverse bool) wireResponse {
	resp := wireResponse{Object: "list", Model: req.Model}
	for i, s := range req.Input {
		resp.Data = append(resp.Data, wireDatum{Object: "embedding", Index: i, Embedding: fakeVector(s, dims)})
	}
	if reverse {
		for i, j := 0, len(resp.Data)-1; i < j; i, j = i+1, j-1 {
			resp.Data[i], resp.Data[j] = resp.Data[j], resp.Data[i]
		}
	}
	resp.Usage.PromptTokens = len(req.Input)
	resp.Usage.TotalTokens = len(req.Input)
	return resp
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func mustNew(t *testing.T, cfg openai.Config) *openai.Embedder {
	t.Helper()
	e, err := openai.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		cfg          openai.Config
		want         postgram.ModelInfo
		wantMaxBatch int
	}{
		{
			name:         "zero config",
			want:         postgram.ModelInfo{Provider: "openai", Name: "text-embedding-3-small", Dimensions: 1536},
			wantMaxBatch: 256,
		},
		{
			name:         "large defaults to 1536",
			cfg:          openai.Config{Model: "text-embedding-3-large"},
			want:         postgram.ModelInfo{Provider: "openai", Name: "text-embedding-3-large", Dimensions: 1536},
			wantMaxBatch: 256,
		},
		{
			name:         "explicit",
			cfg:          openai.Config{Model: "nomic-embed-text", Dimensions: 768, MaxBatch: 8, BaseURL: "http://localhost:8000/v1/"},
			want:         postgram.ModelInfo{Provider: "openai", Name: "nomic-embed-text", Dimensions: 768},
			wantMaxBatch: 8,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := mustNew(t, tt.cfg)
			if diff := cmp.Diff(tt.want, e.Model()); diff != "" {
				t.Errorf("Model() (-want +got):\n%s", diff)
			}
			if got := e.MaxBatch(); got != tt.wantMaxBatch {
				t.Errorf("MaxBatch() = %d, want %d", got, tt.wantMaxBatch)
			}
		})
	}
}

func TestNewInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cfg       openai.Config
		wantField string
	}{
		{"relative base url", openai.Config{BaseURL: "api.openai.com/v1"}, "base_url"},
		{"ftp base url", openai.Config{BaseURL: "ftp://example.com"}, "base_url"},
		{"base url with query", openai.Config{BaseURL: "https://example.com/v1?a=b"}, "base_url"},
		{"unparseable base url", openai.Config{BaseURL: "http://[::1"}, "base_url"},
		{"model spaces", openai.Config{Model: " text-embedding-3-small"}, "model"},
		{"dimensions required", openai.Config{Model: "text-embedding-ada-002"}, "dimensions"},
		{"negative dimensions", openai.Config{Dimensions: -1}, "dimensions"},
		{"negative timeout", openai.Config{Timeout: -time.Second}, "timeout"},
		{"negative max batch", openai.Config{MaxBatch: -1}, "max_batch"},
		{"key with newline", openai.Config{APIKey: testKey + "\n"}, "api_key"},
		{"user agent with newline", openai.Config{UserAgent: "a\r\nb"}, "user_agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := openai.New(tt.cfg)
			if err == nil {
				t.Fatalf("New = %v, nil; want error", e)
			}
			if !errors.Is(err, postgram.ErrInvalidArgument) {
				t.Errorf("New error %v does not wrap ErrInvalidArgument", err)
			}
			if got := postgram.FieldOf(err); got != tt.wantField {
				t.Errorf("FieldOf(%v) = %q, want %q", err, got, tt.wantField)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error leaks the API key: %v", err)
			}
		})
	}
}

func TestEmbedBatchWireFormat(t *testing.T) {
	t.Parallel()
	texts := []string{"alpha", "beta", "gamma", "delta"}
	tests := []struct {
		name     string
		cfg      openai.Config
		wantDims *int
		wantAuth string
	}{
		{
			name:     "text-embedding-3 sends dimensions and key",
			cfg:      openai.Config{APIKey: testKey, UserAgent: "postgram-test/1"},
			wantDims: ptr(1536),
			wantAuth: "Bearer " + testKey,
		},
		{
			name:     "custom dimensions for text-embedding-3",
			cfg:      openai.Config{APIKey: testKey, Model: "text-embedding-3-large", Dimensions: 256},
			wantDims: ptr(256),
			wantAuth: "Bearer " + testKey,
		},
		{
			name: "other model omits dimensions, no key omits auth",
			cfg:  openai.Config{Model: "BAAI/bge-small-en-v1.5", Dimensions: 384},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := mustNew(t, tt.cfg)
			dims := e.Model().Dimensions
			srv := newFakeServer(t, dims, nil)
			tt.cfg.BaseURL = srv.URL + "/v1/"
			e = mustNew(t, tt.cfg)

			got, err := e.EmbedBatch(context.Background(), texts)
			if err != nil {
				t.Fatalf("EmbedBatch: %v", err)
			}
			if diff := cmp.Diff(fakeVectors(texts, dims), got); diff != "" {
				t.Errorf("vectors (-want +got):\n%s", diff)
			}

			reqs := srv.requests()
			if len(reqs) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodPost || r.Path != "/v1/embeddings" {
				t.Errorf("request = %s %s, want POST /v1/embeddings", r.Method, r.Path)
			}
			if got := r.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", got)
			}
			if got := r.Header.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("Authorization = %q, want %q", got, tt.wantAuth)
			}
			if _, ok := r.Header["Authorization"]; ok != (tt.wantAuth != "") {
				t.Errorf("Authorization header present = %v, want %v", ok, tt.wantAuth != "")
			}
			if tt.cfg.UserAgent != "" {
				if got := r.Header.Get("User-Agent"); got != tt.cfg.UserAgent {
					t.Errorf("User-Agent = %q, want %q", got, tt.cfg.UserAgent)
				}
			}
			want := wireRequest{Model: e.Model().Name, Input: texts, EncodingFormat: "float", Dimensions: tt.wantDims}
			if diff := cmp.Diff(want, r.Body); diff != "" {
				t.Errorf("request body (-want +got):\n%s", diff)
			}
			var keys []string
			for k := range r.Raw {
				keys = append(keys, k)
			}
			wantKeys := []string{"encoding_format", "input", "model"}
			if tt.wantDims != nil {
				wantKeys = append(wantKeys, "dimensions")
			}
			if diff := cmp.Diff(wantKeys, keys, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("request JSON keys (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEmbedBatchEmpty(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, 4, nil)
	e := mustNew(t, openai.Config{BaseURL: srv.URL, Model: "m", Dimensions: 4})
	for _, in := range [][]string{nil, {}} {
		got, err := e.EmbedBatch(context.Background(), in)
		if err != nil || got != nil {
			t.Errorf("EmbedBatch(%#v) = %v, %v; want nil, nil", in, got, err)
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
}

func TestEmbedBatchSplits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n, maxBatch int
		wantSizes   []int
	}{
		{n: 1, maxBatch: 3, wantSizes: []int{1}},
		{n: 3, maxBatch: 3, wantSizes: []int{3}},
		{n: 6, maxBatch: 3, wantSizes: []int{3, 3}},
		{n: 7, maxBatch: 3, wantSizes: []int{3, 3, 1}},
		{n: 5, maxBatch: 1, wantSizes: []int{1, 1, 1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d by %d", tt.n, tt.maxBatch), func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, 3, nil)
			e := mustNew(t, openai.Config{BaseURL: srv.URL, Model: "m", Dimensions: 3, MaxBatch: tt.maxBatch})
			texts := make([]string, tt.n)
			for i := range texts {
				texts[i] = fmt.Sprintf("text number %d", i)
			}
			got, err := e.EmbedBatch(context.Background(), texts)
			if err != nil {
				t.Fatalf("EmbedBatch: %v", err)
			}
			if diff := cmp.Diff(fakeVectors(texts, 3), got); diff != "" {
				t.Errorf("vectors (-want +got):\n%s", diff)
			}
			var sizes []int
			var sent []string
			for _, r := range srv.requests() {
				sizes = append(sizes, len(r.Body.Input))
				sent = append(sent, r.Body.Input...)
			}
			if diff := cmp.Diff(tt.wantSizes, sizes); diff != "" {
				t.Errorf("request sizes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(texts, sent); diff != "" {
				t.Errorf("inputs sent (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEmbedBatchStopsAtFirstFailedBatch(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := newFakeServer(t, 2, func(w http.ResponseWriter, req wireRequest) {
		if n.Add(1) == 2 {
			writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]any{"message": "overloaded"}})
			return
		}
		writeJSON(w, http.StatusOK, okResponse(req, 2, false))
	})
	e := mustNew(t, openai.Config{BaseURL: srv.URL, Model: "m", Dimensions: 2, MaxBatch: 2})
	got, err := e.EmbedBatch(context.Background(), []string{"a", "b", "c", "d", "e", "f"})
	if !errors.Is(err, postgram.ErrUnavailable) || got != nil {
		t.Fatalf("EmbedBatch = %v, %v; want nil, ErrUnavailable", got, err)
	}
	if c := len(srv.requests()); c != 2 {
		t.Errorf("server saw %d requests, want 2", c)
	}
}

func TestEmbedBatchErrors(t *testing.T) {
	t.Parallel()
	const dims = 3
	apiErr := func(msg, typ string, code any) map[string]any {
		return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
	}
	raw := func(status int, header http.Header, body string) func(http.ResponseWriter, wireRequest) {
		return func(w http.ResponseWriter, _ wireRequest) {
			for k, v := range header {
				w.Header()[k] = v
			}
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	tests := []struct {
		name    string
		respond func(http.ResponseWriter, wireRequest)
		want    error
		wantIn  []string
	}{
		{
			name: "401 invalid key",
			respond: func(w http.ResponseWriter, _ wireRequest) {
				writeJSON(w, http.StatusUnauthorized, apiErr("Incorrect API key provided: sk-test-****cdef.", "invalid_request_error", "invalid_api_key"))
			},
			want:   postgram.ErrEmbeddingFailed,
			wantIn: []string{"HTTP 401", "Incorrect API key provided", "invalid_api_key"},
		},
		{
			name: "400 bad request",
			respond: func(w http.ResponseWriter, _ wireRequest) {
				writeJSON(w, http.StatusBadRequest, apiErr("This model's maximum context length is 8192 tokens", "invalid_request_error", nil))
			},
			want:   postgram.ErrEmbeddingFailed,
			wantIn: []string{"HTTP 400", "maximum context length"},
		},
		{
			name: "404 unknown model",
			respond: func(w http.ResponseWriter, _ wireRequest) {
				writeJSON(w, http.StatusNotFound, apiErr("The model `nope` does not exist", "invalid_request_error", "model_not_found"))
			},
			want:   postgram.ErrEmbeddingFailed,
			wantIn: []string{"HTTP 404", "does not exist"},
		},
		{
			name: "error echoing the key is redacted",
			respond: func(w http.ResponseWriter, _ wireRequest) {
				writeJSON(w, http.StatusForbidden, apiErr("key "+testKey+" is disabled", "invalid_request_error", nil))
			},
			want:   postgram.ErrEmbeddingFailed,
			wantIn: []string{"HTTP 403", "key [REDACTED] is disabled"},
		},
		{
			name: "429 with Retry-After",
			respond: func(w http.ResponseWriter, _ wireRequest) {
				w.Header().Set("Retry-After", "20")
				writeJSON(w, http.StatusTooManyRequests, apiErr("Rate limit reached", "requests", "rate_limit_exceeded"))
			},
			want:   postgram.ErrRateLimited,
			wantIn: []string{"HTTP 429", "Rate limit reached", "retry after 20s"},
		},
		{
			name:    "429 without Retry-After",
			respond: raw(http.StatusTooManyRequests, nil, ""),
			want:    postgram.ErrRateLimited,
			wantIn:  []string{"HTTP 429"},
		},
		{
			name: "500",
			respond: func(w http.ResponseWriter, _ wireRequest) {
				writeJSON(w, http.StatusInternalServerError, apiErr("The server had an error", "server_error", nil))
			},
			want:   postgram.ErrUnavailable,
			wantIn: []string{"HTTP 500", "The server had an error"},
		},
		{
			name:    "502 html from a proxy",
			respond: raw(http.StatusBadGateway, http.Header{"Content-Type": {"text/html"}}, "<html><body>Bad gateway</body></html>"),
			want:    postgram.ErrUnavailable,
			wantIn:  []string{"HTTP 502", "Bad gateway"},
		},
		{
			name:    "503",
			respond: raw(http.StatusServiceUnavailable, nil, `{"error":{"message":"Engine is overloaded"}}`),
			want:    postgram.ErrUnavailable,
			wantIn:  []string{"HTTP 503", "Engine is overloaded"},
		},
		{
			name:    "malformed JSON",
			respond: raw(http.StatusOK, nil, `{"object":"list","data":[{"index":0,`),
			want:    postgram.ErrEmbeddingFailed,
			wantIn:  []string{"malformed response JSON"},
		},
		{
			name:    "base64 embedding instead of floats",
			respond: raw(http.StatusOK, nil, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AAAA"}]}`),
			want:    postgram.ErrEmbeddingFailed,
			wantIn:  []string{"malformed response JSON"},
		},
		{
			name: "wrong dimensions",
			respond: func(w http.ResponseWriter, req wireRequest) {
				writeJSON(w, http.StatusOK, okResponse(req, dims+1, false))
			},
			want:   postgram.ErrEmbeddingFailed,
			wantIn: []string{"has 4 dimensions, want 3"},
		},
		{
			name: "too few embeddings",
			respond: func(w http.ResponseWriter, req wireRequest) {
				resp := okResponse(req, dims, false)
				resp.Data = resp.Data[:1]
				writeJSON(w, http.StatusOK, resp)
			},
			want:   postgram.ErrEmbeddingFailed,
			wantIn: []string{"got 1 embeddings for 2 inputs"},
		},
		{
			name: "too many embeddings",
			respond: func(w http.ResponseWriter, req wireRequest) {
				resp := okResponse(req, dims, false)
				resp.Data = append(resp.Data, wireDatum{Index: 2, Embedding: fakeVector("x", dims)})
				writeJSON(w, http.StatusOK, resp)
			},
			want:   postgram.ErrEmbeddingFailed,
			wantIn: []string{"got 3 embeddings for 2 inputs"},
		},
		{
			name: "index out of range",
			respond: func(w http.ResponseWriter, req wireRequest) {
				resp := okResponse(req, dims, false)
				resp.Data[1].Index = 5
				writeJSON(w, http.StatusOK, resp)
			},
			want:   postgram.ErrEmbeddingFailed,
			wantIn: []string{"index 5"},
		},
		{
			name: "duplicate index",
			respond: func(w http.ResponseWriter, req wireRequest) {
				resp := okResponse(req, dims, false)
				resp.Data[1].Index = 0
				writeJSON(w, http.StatusOK, resp)
			},
			want:   postgram.ErrEmbeddingFailed,
			wantIn: []string{"repeats index 0"},
		},
		{
			name:    "200 with error body",
			respond: raw(http.StatusOK, nil, `{"error":{"message":"model overloaded","type":"server_error"}}`),
			want:    postgram.ErrEmbeddingFailed,
			wantIn:  []string{"provider error: model overloaded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, dims, tt.respond)
			e := mustNew(t, openai.Config{APIKey: testKey, BaseURL: srv.URL, Model: "m", Dimensions: dims, Timeout: 5 * time.Second})
			got, err := e.EmbedBatch(context.Background(), []string{"one", "two"})
			if err == nil {
				t.Fatalf("EmbedBatch = %v, nil; want error", got)
			}
			if got != nil {
				t.Errorf("EmbedBatch returned vectors %v with error", got)
			}
			checkErr(t, err, tt.want, tt.wantIn...)
		})
	}
}

// checkErr asserts that err wraps want and exactly one sentinel, starts
// with the provider prefix, contains every fragment and never the key.
func checkErr(t *testing.T, err, want error, fragments ...string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("error %q does not wrap %v", err, want)
	}
	var n int
	for _, s := range []error{postgram.ErrEmbeddingFailed, postgram.ErrUnavailable, postgram.ErrRateLimited, postgram.ErrInvalidArgument} {
		if errors.Is(err, s) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("error %q wraps %d sentinels, want 1", err, n)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "openai embeddings: ") {
		t.Errorf("error %q lacks the provider prefix", msg)
	}
	for _, f := range fragments {
		if !strings.Contains(msg, f) {
			t.Errorf("error %q does not contain %q", msg, f)
		}
	}
	if strings.Contains(msg, testKey) {
		t.Errorf("error leaks the API key: %q", msg)
	}
}

// hangingServer never answers until the client goes away or the test ends.
func hangingServer(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)                 // runs second
	t.Cleanup(func() { close(release) }) // runs first
	return srv
}

func TestEmbedBatchTimeout(t *testing.T) {
	t.Parallel()
	srv := hangingServer(t)
	e := mustNew(t, openai.Config{APIKey: testKey, BaseURL: srv.URL, Timeout: 50 * time.Millisecond})
	start := time.Now()
	_, err := e.EmbedBatch(context.Background(), []string{"hello"})
	elapsed := time.Since(start)
	checkErr(t, err, postgram.ErrUnavailable, "50ms")
	if elapsed > 2*time.Second {
		t.Errorf("EmbedBatch returned after %v, want about 50ms", elapsed)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("per-call timeout must not look like the caller's deadline: %v", err)
	}
}

func TestEmbedBatchContext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// ctx returns the call's context; arrived is closed when the
		// server has the request.
		ctx     func(arrived <-chan struct{}) (context.Context, context.CancelFunc)
		wantErr error
	}{
		{
			name: "canceled mid-request",
			ctx: func(arrived <-chan struct{}) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				go func() {
					<-arrived
					cancel()
				}()
				return ctx, cancel
			},
			wantErr: context.Canceled,
		},
		{
			name: "already canceled",
			ctx: func(<-chan struct{}) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			},
			wantErr: context.Canceled,
		},
		{
			name: "caller deadline",
			ctx: func(<-chan struct{}) (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 50*time.Millisecond)
			},
			wantErr: context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var hits atomic.Int32
			release := make(chan struct{})
			arrived := make(chan struct{})
			var once sync.Once
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				once.Do(func() { close(arrived) })
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(release) })

			e := mustNew(t, openai.Config{APIKey: testKey, BaseURL: srv.URL, Timeout: 10 * time.Second})
			ctx, cancel := tt.ctx(arrived)
			defer cancel()
			start := time.Now()
			_, err := e.EmbedBatch(ctx, []string{"hello"})
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Errorf("EmbedBatch returned after %v, want prompt return", elapsed)
			}
			checkErr(t, err, postgram.ErrUnavailable)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v does not wrap %v", err, tt.wantErr)
			}
			if tt.name == "already canceled" && hits.Load() != 0 {
				t.Errorf("server saw %d requests for a canceled context, want 0", hits.Load())
			}
		})
	}
}

func TestEmbedBatchConnectionRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	e := mustNew(t, openai.Config{APIKey: testKey, BaseURL: url})
	_, err := e.EmbedBatch(context.Background(), []string{"hello"})
	checkErr(t, err, postgram.ErrUnavailable, "sending request")
}

// countingTransport counts round trips through the wrapped transport.
type countingTransport struct {
	n    atomic.Int32
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

func TestEmbedBatchCustomHTTPClient(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, 2, nil)
	tr := &countingTransport{next: http.DefaultTransport}
	e := mustNew(t, openai.Config{BaseURL: srv.URL, Model: "m", Dimensions: 2, HTTPClient: &http.Client{Transport: tr}})
	if _, err := e.EmbedBatch(context.Background(), []string{"a"}); err != nil {
		t.Fatalf("EmbedBatch: %v", err)
	}
	if got := tr.n.Load(); got != 1 {
		t.Errorf("custom transport saw %d round trips, want 1", got)
	}
}

func TestEmbedBatchConcurrent(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, 8, nil)
	e := mustNew(t, openai.Config{APIKey: testKey, BaseURL: srv.URL, Model: "m", Dimensions: 8, MaxBatch: 2})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			texts := []string{fmt.Sprint("a", g), fmt.Sprint("b", g), fmt.Sprint("c", g)}
			got, err := e.EmbedBatch(context.Background(), texts)
			if err != nil {
				t.Errorf("EmbedBatch: %v", err)
				return
			}
			if diff := cmp.Diff(fakeVectors(texts, 8), got); diff != "" {
				t.Errorf("vectors (-want +got):\n%s", diff)
			}
		})
	}
	wg.Wait()
	if n := len(srv.requests()); n != 16 {
		t.Errorf("server saw %d requests, want 16", n)
	}
}

func ptr[T any](v T) *T { return &v }
