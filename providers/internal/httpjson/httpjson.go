// Package httpjson is the plumbing the provider SDK adapters share. Call
// runs one SDK request with a per-call timeout, checks the bounded raw
// response body and classifies every failure into exactly one of
// postgram's sentinel errors:
//
//   - HTTP 429                                   → postgram.ErrRateLimited (a *RateLimitError carrying Retry-After)
//   - HTTP 5xx, 408, connection errors, timeouts → postgram.ErrUnavailable
//   - other non-2xx statuses, malformed JSON      → postgram.ErrEmbeddingFailed (or Client.Failure)
//
// Context cancellation is reported as postgram.ErrUnavailable that also wraps
// the context's error, so errors.Is(err, context.Canceled) holds.
//
// Error messages never contain the configured secret (the API key).
package httpjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/postgram-go/postgram"
)

// DefaultMaxBody is the response size limit used when Client.MaxBody is 0.
const DefaultMaxBody int64 = 64 << 20 // 64 MiB

// maxMessage bounds the provider text quoted in an error message.
const maxMessage = 512

// Client classifies the outcomes of one provider's calls. The zero value is usable but
// has no timeout; set the fields before the first call and do not change
// them afterwards. A Client is safe for concurrent use.
type Client struct {
	// Prefix starts every error message, e.g. "openai embeddings".
	Prefix string
	// HTTPClient sends the requests; nil means a client with default
	// settings (http.DefaultTransport, no client-level timeout).
	HTTPClient *http.Client
	// Timeout bounds each call, from sending the request to reading the
	// whole response body. Zero means no limit beyond the caller's context.
	Timeout time.Duration
	// MaxBody limits the response body size in bytes; 0 means DefaultMaxBody.
	MaxBody int64
	// Secret, if set, is replaced by "[REDACTED]" in every error message.
	Secret string
	// Failure is the sentinel wrapped by refusals (non-2xx statuses other
	// than 429, 408 and 5xx), malformed JSON and oversized bodies. Nil
	// means postgram.ErrEmbeddingFailed; LLM clients set
	// postgram.ErrLLMFailed.
	Failure error
}

// failure returns the sentinel for a provider refusal.
func (c *Client) failure() error {
	if c.Failure != nil {
		return c.Failure
	}
	return postgram.ErrEmbeddingFailed
}

// Errorf returns an error that reads "<Prefix>: <sentinel>: <message>",
// wraps sentinel, and has the secret redacted from the message.
func (c *Client) Errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", c.Prefix, sentinel, c.redact(fmt.Sprintf(format, args...)))
}

// StatusError classifies an HTTP answer. It returns nil for 2xx statuses and
// otherwise an error quoting the provider's message extracted from body.
// now is used to interpret an HTTP-date Retry-After header.
func (c *Client) StatusError(status int, header http.Header, body []byte, now time.Time) error {
	if status >= 200 && status <= 299 {
		return nil
	}
	desc := fmt.Sprintf("HTTP %d", status)
	if text := http.StatusText(status); text != "" {
		desc += " " + text
	}
	if msg := Message(body); msg != "" {
		desc += ": " + msg
	}
	switch {
	case status == http.StatusTooManyRequests:
		d, ok := retryAfterHeader(header, now)
		if ok {
			desc += " (retry after " + waitText(d) + ")"
		}
		return &RateLimitError{msg: c.Errorf(postgram.ErrRateLimited, "%s", desc).Error(), wait: d}
	case status >= 500, status == http.StatusRequestTimeout:
		return c.Errorf(postgram.ErrUnavailable, "%s", desc)
	default:
		return c.Errorf(c.failure(), "%s", desc)
	}
}

// RateLimitError is the error for an HTTP 429 answer. It wraps
// postgram.ErrRateLimited, and RetryAfter reports the wait the provider
// asked for (0 when it named none). The type is internal to providers/;
// other packages read the wait through an interface:
//
//	var ra interface{ RetryAfter() time.Duration }
//	if errors.As(err, &ra) && ra.RetryAfter() > 0 { ... }
type RateLimitError struct {
	msg  string
	wait time.Duration
}

func (e *RateLimitError) Error() string { return e.msg }

// Unwrap makes errors.Is(err, postgram.ErrRateLimited) true.
func (e *RateLimitError) Unwrap() error { return postgram.ErrRateLimited }

// RetryAfter is the wait the provider asked for, 0 when it named none.
func (e *RateLimitError) RetryAfter() time.Duration { return e.wait }

// retryAfterHeader reads the wait a 429 answer asks for: retry-after-ms
// (OpenAI, Azure OpenAI) when valid, else Retry-After.
func retryAfterHeader(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < float64(1<<31)*1000 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	return RetryAfter(h.Get("Retry-After"), now)
}

// waitText renders a wait as whole seconds ("20s"), or with a fraction
// ("1.5s", "250ms") when it is not whole.
func waitText(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int64(d/time.Second))
	}
	return d.Round(time.Millisecond).String()
}

// canceled reports that the caller's context ended.
func (c *Client) canceled(ctx context.Context) error {
	return fmt.Errorf("%s: %w: %w", c.Prefix, postgram.ErrUnavailable, ctx.Err())
}

// transportError classifies a failure to send the request or read the
// response: the caller's context ending, the per-call timeout, or a network
// error.
func (c *Client) transportError(ctx, callCtx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return c.canceled(ctx)
	}
	if callCtx.Err() != nil {
		return c.Errorf(postgram.ErrUnavailable, "%s: no complete response within %s", what, c.Timeout)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return c.Errorf(postgram.ErrUnavailable, "%s: timed out: %v", what, err)
	}
	return c.Errorf(postgram.ErrUnavailable, "%s: %v", what, err)
}

// redact removes the secret from s.
func (c *Client) redact(s string) string {
	if c.Secret == "" {
		return s
	}
	return strings.ReplaceAll(s, c.Secret, "[REDACTED]")
}

// readBounded reads at most limit bytes of r. tooLarge reports that r had
// more; the returned bytes are then the first limit bytes.
func readBounded(r io.Reader, limit int64) (body []byte, tooLarge bool, err error) {
	body, err = io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(body)) > limit {
		return body[:limit], true, nil
	}
	return body, false, nil
}

// RetryAfter parses a Retry-After header value, either delay-seconds or an
// HTTP date (interpreted relative to now, rounded up to whole seconds, never
// negative). ok is false when the value is empty or unparseable.
func RetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 63); err == nil {
		const maxSecs = 1 << 31 // about 68 years; avoids Duration overflow
		return time.Duration(min(secs, maxSecs)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d <= 0 {
			return 0, true
		}
		return ((d + time.Second - 1) / time.Second) * time.Second, true
	}
	return 0, false
}

// Message extracts a human-readable message from an error response body.
// It understands the common shapes
//
//	{"error": "message"}                                       (Ollama)
//	{"error": {"message": "...", "type": "...", "code": ...}}  (OpenAI)
//	{"message": "...", "type": "...", "code": ...}             (some compatible servers)
//
// and otherwise falls back to a cleaned, truncated excerpt of the body.
// It returns "" for an empty body.
func Message(body []byte) string {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(body, &env) == nil {
		if msg := ErrorText(env.Error); msg != "" {
			return msg
		}
		if env.Message != "" {
			return describe(env.Message, env.Type, env.Code)
		}
	}
	return clean(string(body))
}

// ErrorText renders the value of an "error" member: a string, or an object
// with message, type and code. It returns "" for a missing or null value.
func ErrorText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return clean(s)
	}
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &obj) == nil && (obj.Message != "" || obj.Type != "") {
		return describe(obj.Message, obj.Type, obj.Code)
	}
	return clean(string(raw))
}

// describe renders "message (type: t, code: c)" leaving out empty parts.
func describe(message, typ string, code json.RawMessage) string {
	var extra []string
	if typ != "" {
		extra = append(extra, "type: "+typ)
	}
	if c := codeText(code); c != "" {
		extra = append(extra, "code: "+c)
	}
	msg := clean(message)
	if len(extra) > 0 {
		if msg != "" {
			msg += " "
		}
		msg += "(" + strings.Join(extra, ", ") + ")"
	}
	return msg
}

// codeText renders a JSON error code that may be a string, a number or null.
func codeText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return clean(s)
	}
	return clean(string(raw))
}

// clean makes provider text safe to embed in an error message: valid UTF-8,
// no control characters, whitespace collapsed, at most maxMessage bytes.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// CleanBaseURL checks that raw is an absolute http or https URL without
// query or fragment and returns it without trailing slashes. The error
// message is suitable for a postgram.FieldError and never contains a
// password embedded in raw.
func CleanBaseURL(raw string) (string, error) {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "", errors.New("not a valid URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("must be an absolute http or https URL, got %q", u.Redacted())
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", errors.New("must not have a query or fragment")
	}
	return strings.TrimRight(raw, "/"), nil
}

// HasControl reports whether s contains an ASCII control character, which
// would make it an invalid HTTP header value.
func HasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// Batched calls embed on consecutive slices of at most max texts and
// concatenates the vectors; the first failure aborts. No texts, no call.
func Batched(ctx context.Context, texts []string, max int, embed func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += max {
		end := min(start+max, len(texts))
		vecs, err := embed(ctx, texts[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}
