package httpjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/postgram-go/postgram"
)

func TestStatusError(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		status  int
		header  http.Header
		body    string
		want    error // nil means success
		wantMsg string
	}{
		{name: "200", status: 200},
		{name: "204", status: 204},
		{
			name: "429 seconds", status: 429, header: http.Header{"Retry-After": {"7"}},
			body: `{"error":{"message":"slow down"}}`,
			want: postgram.ErrRateLimited, wantMsg: "p: rate limited: HTTP 429 Too Many Requests: slow down (retry after 7s)",
		},
		{
			name: "429 date", status: 429, header: http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}},
			want: postgram.ErrRateLimited, wantMsg: "p: rate limited: HTTP 429 Too Many Requests (retry after 90s)",
		},
		{
			name: "429 bad header", status: 429, header: http.Header{"Retry-After": {"soon"}},
			want: postgram.ErrRateLimited, wantMsg: "p: rate limited: HTTP 429 Too Many Requests",
		},
		{
			name: "500", status: 500, body: `{"error":"boom"}`,
			want: postgram.ErrUnavailable, wantMsg: "p: unavailable: HTTP 500 Internal Server Error: boom",
		},
		{
			name: "503 html", status: 503, body: "<html>\n  <b>down</b>\n</html>",
			want: postgram.ErrUnavailable, wantMsg: "p: unavailable: HTTP 503 Service Unavailable: <html> <b>down</b> </html>",
		},
		{name: "408", status: 408, want: postgram.ErrUnavailable, wantMsg: "p: unavailable: HTTP 408 Request Timeout"},
		{
			name: "401", status: 401, body: `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`,
			want: postgram.ErrEmbeddingFailed, wantMsg: "p: embedding failed: HTTP 401 Unauthorized: bad key (type: invalid_request_error, code: invalid_api_key)",
		},
		{
			name: "400 top-level message", status: 400, body: `{"object":"error","message":"too long","type":"BadRequestError","code":400}`,
			want: postgram.ErrEmbeddingFailed, wantMsg: "p: embedding failed: HTTP 400 Bad Request: too long (type: BadRequestError, code: 400)",
		},
		{name: "302", status: 302, want: postgram.ErrEmbeddingFailed, wantMsg: "p: embedding failed: HTTP 302 Found"},
		{name: "unknown status", status: 499, want: postgram.ErrEmbeddingFailed, wantMsg: "p: embedding failed: HTTP 499"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &Client{Prefix: "p"}
			err := c.StatusError(tt.status, tt.header, []byte(tt.body), now)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("StatusError = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("StatusError = %v, want wrapping %v", err, tt.want)
			}
			if diff := cmp.Diff(tt.wantMsg, err.Error()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{" 12 ", 12 * time.Second, true},
		{"-3", 0, false},
		{"1.5", 0, false},
		{"abc", 0, false},
		{"99999999999999999999", 0, false},
		{"9223372036854775807", (1 << 31) * time.Second, true},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	}
	for _, tt := range tests {
		got, ok := RetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, want string
	}{
		{"empty", "", ""},
		{"ollama", `{"error":"model \"x\" not found, try pulling it first"}`, `model "x" not found, try pulling it first`},
		{"openai", `{"error":{"message":"m","type":"t","code":null}}`, "m (type: t)"},
		{"openai numeric code", `{"error":{"message":"m","code":42}}`, "m (code: 42)"},
		{"error null falls back to message", `{"error":null,"message":"top"}`, "top"},
		{"error object without message", `{"error":{"foo":1}}`, `{"foo":1}`},
		{"plain text", "upstream\tconnect error\r\n", "upstream connect error"},
		{"control chars", "a\x00b\x1bc", "a b c"},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
		{"long", strings.Repeat("é", 400), strings.Repeat("é", 256) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, Message([]byte(tt.body))); diff != "" {
				t.Errorf("Message(%q) (-want +got):\n%s", tt.body, diff)
			}
		})
	}
}

func TestCleanBaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "http://localhost:11434", want: "http://localhost:11434"},
		{in: "https://api.example.com/v1///", want: "https://api.example.com/v1"},
		{in: "", wantErr: true},
		{in: "localhost:11434", wantErr: true},
		{in: "ftp://example.com", wantErr: true},
		{in: "https://", wantErr: true},
		{in: "https://example.com/v1?x=1", wantErr: true},
		{in: "https://example.com/v1#frag", wantErr: true},
		{in: "https://user:hunter2@exa mple.com", wantErr: true},
		{in: "ftp://user:hunter2@example.com", wantErr: true},
		{in: "http://[::1", wantErr: true},
	}
	for _, tt := range tests {
		got, err := CleanBaseURL(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("CleanBaseURL(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("CleanBaseURL(%q) error leaks the password: %v", tt.in, err)
		}
	}
}

func TestCall(t *testing.T) {
	t.Parallel()
	const secret = "sk-very-secret"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			if got := r.Header.Get("Authorization"); got != "Bearer "+secret {
				http.Error(w, `{"error":"bad auth"}`, http.StatusUnauthorized)
				return
			}
			if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Accept") != "application/json" {
				http.Error(w, `{"error":"bad content type"}`, http.StatusBadRequest)
				return
			}
			w.Write([]byte(`{"ok":true,"echo":"` + r.Header.Get("X-Extra") + `"}`))
		case "/big":
			w.Write([]byte(`{"ok":true,"pad":"` + strings.Repeat("x", 1000) + `"}`))
		case "/leak":
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"unknown key ` + secret + `"}`))
		case "/notjson":
			w.Write([]byte(`<html>hello</html>`))
		}
	}))
	t.Cleanup(srv.Close)

	type reply struct {
		OK   bool   `json:"ok"`
		Echo string `json:"echo"`
	}
	tests := []struct {
		name    string
		path    string
		maxBody int64
		want    error
		wantIn  string
		wantOut reply
	}{
		{name: "ok", path: "/echo", wantOut: reply{OK: true, Echo: "x"}},
		{name: "body within limit", path: "/big", maxBody: 2000, wantOut: reply{OK: true}},
		{name: "body too large", path: "/big", maxBody: 100, want: postgram.ErrEmbeddingFailed, wantIn: "response body exceeds 100 bytes"},
		{name: "secret redacted", path: "/leak", want: postgram.ErrEmbeddingFailed, wantIn: "unknown key [REDACTED]"},
		{name: "not json", path: "/notjson", want: postgram.ErrEmbeddingFailed, wantIn: "malformed response JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &Client{
				Prefix:  "p",
				Timeout: 5 * time.Second,
				MaxBody: tt.maxBody,
				Secret:  secret,
			}
			var got reply
			err := postJSON(c, context.Background(), srv.URL+tt.path, map[string]int{"a": 1}, &got)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Call: %v", err)
				}
				if diff := cmp.Diff(tt.wantOut, got); diff != "" {
					t.Errorf("reply (-want +got):\n%s", diff)
				}
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.wantIn) {
				t.Fatalf("Call = %v, want %v containing %q", err, tt.want, tt.wantIn)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error leaks the secret: %v", err)
			}
		})
	}
}

func TestCallUnencodable(t *testing.T) {
	t.Parallel()
	c := &Client{Prefix: "p"}
	err := postJSON(c, context.Background(), "http://127.0.0.1:1/", func() {}, nil)
	if !errors.Is(err, postgram.ErrEmbeddingFailed) {
		t.Fatalf("Call = %v, want ErrEmbeddingFailed", err)
	}
}

func TestCallConnectionRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c := &Client{Prefix: "p", Timeout: 5 * time.Second}
	err := postJSON(c, context.Background(), url, 1, nil)
	if !errors.Is(err, postgram.ErrUnavailable) {
		t.Fatalf("Call = %v, want ErrUnavailable", err)
	}
}

func TestCallClientTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	// The http.Client's own timeout, not Client.Timeout, fires here.
	c := &Client{Prefix: "p", HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}}
	err := postJSON(c, context.Background(), srv.URL, 1, nil)
	if !errors.Is(err, postgram.ErrUnavailable) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("Call = %v, want ErrUnavailable mentioning a timeout", err)
	}
}

func TestRateLimitErrorRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		header  http.Header
		want    time.Duration
		wantMsg string
	}{
		{name: "none", want: 0, wantMsg: "p: rate limited: HTTP 429 Too Many Requests"},
		{name: "seconds", header: http.Header{"Retry-After": {"20"}}, want: 20 * time.Second,
			wantMsg: "p: rate limited: HTTP 429 Too Many Requests (retry after 20s)"},
		{name: "date", header: http.Header{"Retry-After": {now.Add(time.Minute).Format(http.TimeFormat)}}, want: time.Minute,
			wantMsg: "p: rate limited: HTTP 429 Too Many Requests (retry after 60s)"},
		{name: "milliseconds win", header: http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"2"}}, want: 1500 * time.Millisecond,
			wantMsg: "p: rate limited: HTTP 429 Too Many Requests (retry after 1.5s)"},
		{name: "bad milliseconds fall back", header: http.Header{"Retry-After-Ms": {"soon"}, "Retry-After": {"2"}}, want: 2 * time.Second,
			wantMsg: "p: rate limited: HTTP 429 Too Many Requests (retry after 2s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &Client{Prefix: "p", Secret: "sk-x"}
			err := c.StatusError(http.StatusTooManyRequests, tt.header, nil, now)
			if !errors.Is(err, postgram.ErrRateLimited) {
				t.Fatalf("StatusError = %v, want ErrRateLimited", err)
			}
			// What code outside providers/ can do without naming the type.
			var ra interface{ RetryAfter() time.Duration }
			if !errors.As(err, &ra) {
				t.Fatalf("StatusError = %T, which has no RetryAfter method", err)
			}
			if ra.RetryAfter() != tt.want {
				t.Errorf("RetryAfter() = %v, want %v", ra.RetryAfter(), tt.want)
			}
			if diff := cmp.Diff(tt.wantMsg, err.Error()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

// postJSON stands in for an SDK: it sends in as JSON with a plain
// net/http request through Capturing (Secret as the bearer key) and lets Call classify the outcome.
func postJSON(c *Client, ctx context.Context, url string, in, out any) error {
	hc := Capturing(c.HTTPClient, c.Secret, c.MaxBody)
	send := func(ctx context.Context) ([]byte, error) {
		payload, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encoding request: %v", err)
		}
		ctx, answer := WithCapture(ctx)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("X-Extra", "x")
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return answer.Result(err)
	}
	return c.Call(ctx, send, out)
}
