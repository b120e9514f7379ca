package ollama_test

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
	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/ollama"
)

// Compile-time checks.
var (
	_ postgram.Embedder   = (*ollama.Embedder)(nil)
	_ postgram.MaxBatcher = (*ollama.Embedder)(nil)
)

const testKey = "ollama-proxy-secret-42"

type wireRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type wireResponse struct {
	Model           string      `json:"model"`
	Embeddings      [][]float32 `json:"embeddings"`
	TotalDuration   int64       `json:"total_duration"`
	LoadDuration    int64       `json:"load_duration"`
	PromptEvalCount int         `json:"prompt_eval_count"`
}

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

// fakeServer speaks Ollama's /api/embed wire format and records requests.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

// newFakeServer starts a server; respond nil means correct answers.
func newFakeServer(t *testing.T, dims int, respond func(w http.ResponseWriter, req wireRequest)) *fakeServer {
	t.Helper()
	if respond == nil {
		respond = func(w http.ResponseWriter, req wireRequest) {
			writeJSON(w, http.StatusOK, okResponse(req, dims))
		}
	}
	fs := &fakeServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		rec := recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()}
		if err := json.Unmarshal(body, &rec.Raw); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		if err := json.Unmarshal(body, &rec.Body); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
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

func okResponse(req wireRequest, dims int) wireResponse {
	return wireResponse{Model: req.Model, Embeddings: fakeVectors(req.Input, dims), TotalDuration: 1000, PromptEvalCount: len(req.Input)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func mustNew(t *testing.T, cfg ollama.Config) *ollama.Embedder {
	t.Helper()
	e, err := ollama.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		cfg          ollama.Config
		want         postgram.ModelInfo
		wantMaxBatch int
	}{
		{
			name:         "zero config",
			want:         postgram.ModelInfo{Provider: "ollama", Name: "bge-m3", Dimensions: 1024},
			wantMaxBatch: 64,
		},
		{
			name:         "tagged bge-m3",
			cfg:          ollama.Config{Model: "bge-m3:latest"},
			want:         postgram.ModelInfo{Provider: "ollama", Name: "bge-m3:latest", Dimensions: 1024},
			wantMaxBatch: 64,
		},
		{
			name:         "explicit",
			cfg:          ollama.Config{Model: "nomic-embed-text", Dimensions: 768, MaxBatch: 16, BaseURL: "http://gpu-box:11434/"},
			want:         postgram.ModelInfo{Provider: "ollama", Name: "nomic-embed-text", Dimensions: 768},
			wantMaxBatch: 16,
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
		cfg       ollama.Config
		wantField string
	}{
		{"relative base url", ollama.Config{BaseURL: "localhost:11434"}, "base_url"},
		{"base url with fragment", ollama.Config{BaseURL: "http://localhost:11434#x"}, "base_url"},
		{"model spaces", ollama.Config{Model: "bge-m3 "}, "model"},
		{"dimensions required", ollama.Config{Model: "nomic-embed-text"}, "dimensions"},
		{"negative dimensions", ollama.Config{Dimensions: -5}, "dimensions"},
		{"negative timeout", ollama.Config{Timeout: -time.Millisecond}, "timeout"},
		{"negative max batch", ollama.Config{MaxBatch: -1}, "max_batch"},
		{"key with newline", ollama.Config{APIKey: "a\nb"}, "api_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := ollama.New(tt.cfg)
			if err == nil {
				t.Fatalf("New = %v, nil; want error", e)
			}
			if !errors.Is(err, postgram.ErrInvalidArgument) {
				t.Errorf("New error %v does not wrap ErrInvalidArgument", err)
			}
			if got := postgram.FieldOf(err); got != tt.wantField {
				t.Errorf("FieldOf(%v) = %q, want %q", err, got, tt.wantField)
			}
		})
	}
}

func TestEmbedBatchWireFormat(t *testing.T) {
	t.Parallel()
	texts := []string{"alpha", "beta", "γάμμα"}
	tests := []struct {
		name     string
		key      string
		wantAuth string
	}{
		{name: "no key, no auth header"},
		{name: "key sent as bearer", key: testKey, wantAuth: "Bearer " + testKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, 1024, nil)
			e := mustNew(t, ollama.Config{BaseURL: srv.URL + "/", APIKey: tt.key})
			got, err := e.EmbedBatch(context.Background(), texts)
			if err != nil {
				t.Fatalf("EmbedBatch: %v", err)
			}
			if diff := cmp.Diff(fakeVectors(texts, 1024), got); diff != "" {
				t.Errorf("vectors (-want +got):\n%s", diff)
			}
			reqs := srv.requests()
			if len(reqs) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodPost || r.Path != "/api/embed" {
				t.Errorf("request = %s %s, want POST /api/embed", r.Method, r.Path)
			}
			if got := r.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", got)
			}
			_, hasAuth := r.Header["Authorization"]
			if got := r.Header.Get("Authorization"); got != tt.wantAuth || hasAuth != (tt.wantAuth != "") {
				t.Errorf("Authorization = %q (present %v), want %q", got, hasAuth, tt.wantAuth)
			}
			if diff := cmp.Diff(wireRequest{Model: "bge-m3", Input: texts}, r.Body); diff != "" {
				t.Errorf("request body (-want +got):\n%s", diff)
			}
			// The Ollama client always sends "options", null when unset.
			extra := map[string]string{}
			for k, v := range r.Raw {
				if k != "model" && k != "input" {
					extra[k] = string(v)
				}
			}
			if d := cmp.Diff(map[string]string{"options": "null"}, extra); d != "" {
				t.Errorf("request members besides model and input (-want +got):\n%s", d)
			}
		})
	}
}

func TestEmbedBatchEmpty(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, 4, nil)
	e := mustNew(t, ollama.Config{BaseURL: srv.URL, Model: "m", Dimensions: 4})
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
		{n: 2, maxBatch: 4, wantSizes: []int{2}},
		{n: 4, maxBatch: 4, wantSizes: []int{4}},
		{n: 9, maxBatch: 4, wantSizes: []int{4, 4, 1}},
		{n: 130, maxBatch: 0, wantSizes: []int{64, 64, 2}}, // default MaxBatch
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d by %d", tt.n, tt.maxBatch), func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, 2, nil)
			e := mustNew(t, ollama.Config{BaseURL: srv.URL, Model: "m", Dimensions: 2, MaxBatch: tt.maxBatch})
			texts := make([]string, tt.n)
			for i := range texts {
				texts[i] = fmt.Sprintf("chunk %d", i)
			}
			got, err := e.EmbedBatch(context.Background(), texts)
			if err != nil {
				t.Fatalf("EmbedBatch: %v", err)
			}
			if diff := cmp.Diff(fakeVectors(texts, 2), got); diff != "" {
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

func TestEmbedBatchErrors(t *testing.T) {
	t.Parallel()
	const dims = 3
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
			name:    "401 from auth proxy",
			respond: raw(http.StatusUnauthorized, nil, `{"error":"unauthorized"}`),
			want:    postgram.ErrEmbeddingFailed,
			wantIn:  []string{"HTTP 401", "unauthorized"},
		},
		{
			name:    "400 bad request",
			respond: raw(http.StatusBadRequest, nil, `{"error":"invalid input type"}`),
			want:    postgram.ErrEmbeddingFailed,
			wantIn:  []string{"HTTP 400", "invalid input type"},
		},
		{
			name:    "404 model not pulled",
			respond: raw(http.StatusNotFound, nil, `{"error":"model \"bge-m3\" not found, try pulling it first"}`),
			want:    postgram.ErrEmbeddingFailed,
			wantIn:  []string{"HTTP 404", `model "bge-m3" not found`},
		},
		{
			name:    "error echoing the key is redacted",
			respond: raw(http.StatusForbidden, nil, `{"error":"token `+testKey+` revoked"}`),
			want:    postgram.ErrEmbeddingFailed,
			wantIn:  []string{"HTTP 403", "token [REDACTED] revoked"},
		},
		{
			name:    "429 with Retry-After",
			respond: raw(http.StatusTooManyRequests, http.Header{"Retry-After": {"3"}}, `{"error":"server busy, please try again.  maximum pending requests exceeded"}`),
			want:    postgram.ErrRateLimited,
			wantIn:  []string{"HTTP 429", "server busy", "retry after 3s"},
		},
		{
			name:    "500",
			respond: raw(http.StatusInternalServerError, nil, `{"error":"llama runner process has terminated: signal: killed"}`),
			want:    postgram.ErrUnavailable,
			wantIn:  []string{"HTTP 500", "llama runner process has terminated"},
		},
		{
			name:    "503",
			respond: raw(http.StatusServiceUnavailable, nil, `{"error":"server shutting down"}`),
			want:    postgram.ErrUnavailable,
			wantIn:  []string{"HTTP 503", "server shutting down"},
		},
		{
			name:    "malformed JSON",
			respond: raw(http.StatusOK, nil, `{"model":"m","embeddings":[[1,2,`),
			want:    postgram.ErrEmbeddingFailed,
			wantIn:  []string{"malformed response JSON"},
		},
		{
			name:    "legacy single embedding shape",
			respond: raw(http.StatusOK, nil, `{"embedding":[1,2,3]}`),
			want:    postgram.ErrEmbeddingFailed,
			wantIn:  []string{"got 0 embeddings for 2 inputs"},
		},
		{
			name: "wrong dimensions",
			respond: func(w http.ResponseWriter, req wireRequest) {
				resp := okResponse(req, dims)
				resp.Embeddings[1] = resp.Embeddings[1][:2]
				writeJSON(w, http.StatusOK, resp)
			},
			want:   postgram.ErrEmbeddingFailed,
			wantIn: []string{"embedding for input 1 has 2 dimensions, want 3"},
		},
		{
			name: "too few embeddings",
			respond: func(w http.ResponseWriter, req wireRequest) {
				resp := okResponse(req, dims)
				resp.Embeddings = resp.Embeddings[:1]
				writeJSON(w, http.StatusOK, resp)
			},
			want:   postgram.ErrEmbeddingFailed,
			wantIn: []string{"got 1 embeddings for 2 inputs"},
		},
		{
			name: "too many embeddings",
			respond: func(w http.ResponseWriter, req wireRequest) {
				resp := okResponse(req, dims)
				resp.Embeddings = append(resp.Embeddings, fakeVector("x", dims))
				writeJSON(w, http.StatusOK, resp)
			},
			want:   postgram.ErrEmbeddingFailed,
			wantIn: []string{"got 3 embeddings for 2 inputs"},
		},
		{
			name:    "200 with error body",
			respond: raw(http.StatusOK, nil, `{"error":"context canceled"}`),
			want:    postgram.ErrEmbeddingFailed,
			wantIn:  []string{"provider error: context canceled"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, dims, tt.respond)
			e := mustNew(t, ollama.Config{APIKey: testKey, BaseURL: srv.URL, Model: "m", Dimensions: dims, Timeout: 5 * time.Second})
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
	if !strings.HasPrefix(msg, "ollama embeddings: ") {
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

// hangingServer never answers until the client goes away or the test ends;
// hits counts requests and arrived receives a value for each.
func hangingServer(t *testing.T, hits *atomic.Int32, arrived chan<- struct{}) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if arrived != nil {
			select {
			case arrived <- struct{}{}:
			default:
			}
		}
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
	var hits atomic.Int32
	srv := hangingServer(t, &hits, nil)
	e := mustNew(t, ollama.Config{APIKey: testKey, BaseURL: srv.URL, Timeout: 50 * time.Millisecond})
	start := time.Now()
	_, err := e.EmbedBatch(context.Background(), []string{"hello"})
	elapsed := time.Since(start)
	checkErr(t, err, postgram.ErrUnavailable, "50ms")
	if elapsed > 2*time.Second {
		t.Errorf("EmbedBatch returned after %v, want about 50ms", elapsed)
	}
}

func TestEmbedBatchContext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// ctx returns the call's context; arrived receives a value when
		// the server has the request.
		ctx      func(arrived <-chan struct{}) (context.Context, context.CancelFunc)
		wantErr  error
		wantHits int32 // -1: don't care
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
			wantErr:  context.Canceled,
			wantHits: 1,
		},
		{
			name: "already canceled",
			ctx: func(<-chan struct{}) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			},
			wantErr:  context.Canceled,
			wantHits: 0,
		},
		{
			name: "caller deadline",
			ctx: func(<-chan struct{}) (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 50*time.Millisecond)
			},
			wantErr:  context.DeadlineExceeded,
			wantHits: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var hits atomic.Int32
			arrived := make(chan struct{}, 1)
			srv := hangingServer(t, &hits, arrived)
			e := mustNew(t, ollama.Config{APIKey: testKey, BaseURL: srv.URL, Timeout: 10 * time.Second})
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
			if got := hits.Load(); tt.wantHits >= 0 && got != tt.wantHits {
				t.Errorf("server saw %d requests, want %d", got, tt.wantHits)
			}
		})
	}
}

func TestEmbedBatchConnectionRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	e := mustNew(t, ollama.Config{APIKey: testKey, BaseURL: url})
	_, err := e.EmbedBatch(context.Background(), []string{"hello"})
	checkErr(t, err, postgram.ErrUnavailable, "sending request")
}

func TestEmbedBatchConcurrent(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, 8, nil)
	e := mustNew(t, ollama.Config{BaseURL: srv.URL, Model: "m", Dimensions: 8, MaxBatch: 2})
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
