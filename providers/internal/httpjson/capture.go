package httpjson

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// Capture records the answer to the one request made under a context from
// WithCapture, for SDKs that keep neither the headers nor the body of an
// error answer (the Ollama client keeps only a message).
type Capture struct {
	status int
	header http.Header
	body   []byte
}

type captureKey struct{}

// WithCapture returns a context whose request's answer the transport of a
// Capturing client records into the returned Capture.
func WithCapture(ctx context.Context) (context.Context, *Capture) {
	c := &Capture{}
	return context.WithValue(ctx, captureKey{}, c), c
}

// Result turns an SDK call's outcome into what Client.Call expects: the
// raw body of a 2xx answer (whatever the SDK made of it; Call decodes and
// checks it), a *StatusAnswer for any other answer, or err when no answer
// arrived.
func (c *Capture) Result(err error) ([]byte, error) {
	switch {
	case c.status == 0:
		return nil, err
	case c.status >= 200 && c.status <= 299:
		return c.body, nil
	default:
		return nil, &StatusAnswer{Status: c.status, Header: c.header, Body: c.body}
	}
}

// Capturing returns a copy of hc (nil: a default client) whose transport
// sets "Authorization: Bearer <apiKey>" (removing any other Authorization
// when apiKey is empty), bounds response bodies to maxBody bytes (0:
// DefaultMaxBody) and records answers for WithCapture contexts.
func Capturing(hc *http.Client, apiKey string, maxBody int64) *http.Client {
	if hc == nil {
		hc = &http.Client{}
	}
	out := *hc
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	out.Transport = &captureTransport{base: base, apiKey: apiKey, maxBody: maxBody}
	return &out
}

type captureTransport struct {
	base    http.RoundTripper
	apiKey  string
	maxBody int64
}

func (t *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Del("Authorization")
	if t.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.apiKey)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	c, _ := req.Context().Value(captureKey{}).(*Capture)
	if c == nil {
		LimitBody(resp, t.maxBody)
		return resp, nil
	}
	body, tooLarge, err := readBounded(resp.Body, t.maxBody)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if tooLarge && resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil, errTooLarge
	}
	c.status, c.header, c.body = resp.StatusCode, resp.Header, body
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}
