// Package api is pgm's client for the Postgram REST API (DESIGN.md §8):
// routes under /api, Bearer authentication, snake_case JSON and the error
// envelope {"error":{"code","message","details"}}.
//
// Every call returns the decoded response together with the raw response
// body, so callers can print either a compact view or the complete REST
// response. Failures are one of:
//   - *apierror.ResponseError: the server answered with an error status;
//   - *UnreachableError: the request never got an answer (connection
//     refused, DNS failure, timeout, connection reset);
//   - the context's error, when the caller's context was canceled;
//   - *ProtocolError: the server answered 2xx with a body pgm cannot read.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/wire"
)

// maxResponseBytes bounds a response body (a full page of large entities
// fits comfortably).
const maxResponseBytes = 256 << 20

// Client talks to one Postgram server.
type Client struct {
	// BaseURL is the server's root, e.g. http://127.0.0.1:3100 (no /api).
	BaseURL string
	// APIKey is sent as a Bearer token when not empty.
	APIKey string
	// HTTP is the HTTP client; its Timeout bounds every request.
	HTTP *http.Client
	// UserAgent is sent in the User-Agent header when not empty.
	UserAgent string
}

// UnreachableError reports a request that got no HTTP answer.
type UnreachableError struct {
	URL      string        // the server's base URL
	TimedOut bool          // the request timed out
	Timeout  time.Duration // the client timeout (0: unknown)
	Err      error         // the transport error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the Postgram server at %s: %s", e.URL, e.Reason())
}

// Reason describes why the server could not be reached, without the URL.
func (e *UnreachableError) Reason() string {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case e.TimedOut && e.Timeout > 0:
		return "no response within " + e.Timeout.String()
	case e.TimedOut:
		return "the request timed out"
	case errors.As(e.Err, &dns):
		if dns.IsNotFound {
			return "host " + dns.Name + " not found"
		}
		return "DNS lookup of " + dns.Name + " failed: " + dns.Err
	case errors.As(e.Err, &op) && op.Op == "dial":
		if op.Err != nil {
			return unwrapSyscall(op.Err)
		}
		return "connection failed"
	}
	var ue *url.Error
	if errors.As(e.Err, &ue) {
		return ue.Err.Error()
	}
	return e.Err.Error()
}

func unwrapSyscall(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && strings.HasPrefix(s, "connect") {
		return s[i+2:]
	}
	return s
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// ProtocolError reports a successful status with an unreadable body.
type ProtocolError struct {
	Status int
	Err    error
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("unexpected response from the server (HTTP %d): %v", e.Status, e.Err)
}

func (e *ProtocolError) Unwrap() error { return e.Err }

// do sends one request. body, when not nil, is sent as JSON; a 2xx
// response body is decoded into out (when not nil) and returned raw.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) ([]byte, error) {
	u := strings.TrimRight(c.BaseURL, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(body); err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		rd = &buf
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, hc, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, c.transportError(ctx, hc, err)
	}
	if len(raw) > maxResponseBytes {
		return nil, &ProtocolError{Status: resp.StatusCode, Err: fmt.Errorf("response larger than %d bytes", maxResponseBytes)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, responseError(resp.StatusCode, raw)
	}
	if out != nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(out); err != nil {
			return nil, &ProtocolError{Status: resp.StatusCode, Err: err}
		}
	}
	return raw, nil
}

func (c *Client) transportError(ctx context.Context, hc *http.Client, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	ue := &UnreachableError{URL: c.BaseURL, Err: err}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		ue.TimedOut, ue.Timeout = true, hc.Timeout
	}
	return ue
}

// responseError turns an error response into *apierror.ResponseError. An
// envelope with a code this client does not know is classified by its HTTP
// status. A body that is not an envelope did not come from Postgram (a
// proxy's or another server's page): it is classified by status too, a
// gateway error counting as an unavailable server, and the message says so.
func responseError(status int, raw []byte) error {
	var env apierror.Envelope
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&env); err != nil || env.Error.Code == "" {
		code := CodeForStatus(status)
		if status == http.StatusBadGateway || status == http.StatusGatewayTimeout {
			code = apierror.Unavailable
		}
		msg := "HTTP " + strconv.Itoa(status)
		if t := http.StatusText(status); t != "" {
			msg += " " + t
		}
		msg += " (not a Postgram error response: is the API URL right, or is a proxy failing?)"
		return &apierror.ResponseError{Status: status, Body: apierror.Body{Code: code, Message: msg}}
	}
	if !knownCode(env.Error.Code) {
		env.Error.Code = CodeForStatus(status)
	}
	return &apierror.ResponseError{Status: status, Body: env.Error}
}

func knownCode(c apierror.Code) bool {
	for _, k := range apierror.Codes() {
		if k == c {
			return true
		}
	}
	return false
}

// CodeForStatus is the error code whose HTTP status is status: other 4xx
// statuses are VALIDATION, other statuses INTERNAL.
func CodeForStatus(status int) apierror.Code {
	for _, c := range apierror.Codes() {
		if c.Status() == status {
			return c
		}
	}
	if status >= 400 && status < 500 {
		return apierror.Validation
	}
	return apierror.Internal
}

// entityPath is the path of one entity; id is escaped.
func entityPath(id string) string { return "/api/entities/" + url.PathEscape(id) }

// decodeEntity reads a single-entity response: {"entity": {...}}, or a bare
// entity object for tolerance.
func decodeEntity(raw []byte) (*postgram.Entity, error) {
	var env wire.EntityResponse
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&env); err != nil {
		return nil, err
	}
	if env.Entity != nil {
		return env.Entity, nil
	}
	var e postgram.Entity
	dec = json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&e); err != nil {
		return nil, err
	}
	if e.ID == uuid.Nil {
		return nil, errors.New("response holds no entity")
	}
	return &e, nil
}

func (c *Client) entity(ctx context.Context, method, path string, body any) (*postgram.Entity, []byte, error) {
	raw, err := c.do(ctx, method, path, nil, body, nil)
	if err != nil {
		return nil, nil, err
	}
	e, err := decodeEntity(raw)
	if err != nil {
		return nil, nil, &ProtocolError{Status: http.StatusOK, Err: err}
	}
	return e, raw, nil
}

// Store creates an entity (POST /api/entities).
func (c *Client) Store(ctx context.Context, in wire.StoreRequest) (*postgram.Entity, []byte, error) {
	return c.entity(ctx, http.MethodPost, "/api/entities", in)
}

// Get reads one entity (GET /api/entities/{id}).
func (c *Client) Get(ctx context.Context, id string) (*postgram.Entity, []byte, error) {
	return c.entity(ctx, http.MethodGet, entityPath(id), nil)
}

// Update changes an entity (PATCH /api/entities/{id}).
func (c *Client) Update(ctx context.Context, id string, in wire.UpdateRequest) (*postgram.Entity, []byte, error) {
	return c.entity(ctx, http.MethodPatch, entityPath(id), in)
}

// Delete soft-deletes (archives) an entity (DELETE /api/entities/{id}).
func (c *Client) Delete(ctx context.Context, id string) (*wire.DeleteResponse, []byte, error) {
	var out wire.DeleteResponse
	raw, err := c.do(ctx, http.MethodDelete, entityPath(id), nil, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// List pages through entities (GET /api/entities), newest first.
func (c *Client) List(ctx context.Context, q ListQuery) (*wire.EntityList, []byte, error) {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("type", q.Type)
	set("status", q.Status)
	set("visibility", q.Visibility)
	set("owner", q.Owner)
	set("memory_role", q.MemoryRole)
	if len(q.Tags) > 0 {
		v.Set("tags", strings.Join(q.Tags, ","))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	if q.IncludeArchived {
		v.Set("include_archived", "true")
	}
	var out wire.EntityList
	raw, err := c.do(ctx, http.MethodGet, "/api/entities", v, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// Search runs hybrid search (POST /api/search).
func (c *Client) Search(ctx context.Context, in wire.SearchRequest) (*wire.SearchResponse, []byte, error) {
	var out wire.SearchResponse
	raw, err := c.do(ctx, http.MethodPost, "/api/search", nil, in, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// Queue reports the enrichment queue (GET /api/queue).
func (c *Client) Queue(ctx context.Context, q QueueQuery) (*wire.QueueResponse, []byte, error) {
	v := url.Values{}
	if q.IncludeFailures {
		v.Set("include_failures", "true")
	}
	if q.FailureLimit > 0 {
		v.Set("failure_limit", strconv.Itoa(q.FailureLimit))
	}
	var out wire.QueueResponse
	raw, err := c.do(ctx, http.MethodGet, "/api/queue", v, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// Backup opens the stream of GET /api/admin/backup (the backup format of
// package backup). The client's Timeout does not apply to it (a backup
// takes as long as it takes); ctx cancels it. The caller closes the body.
func (c *Client) Backup(ctx context.Context) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.BaseURL, "/")+"/api/admin/backup", nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/octet-stream, application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	hc := http.DefaultClient
	if c.HTTP != nil {
		hc = c.HTTP
	}
	stream := *hc
	stream.Timeout = 0
	resp, err := stream.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, hc, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, responseError(resp.StatusCode, raw)
	}
	return resp.Body, nil
}
