package httpjson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// StatusAnswer is a non-2xx answer an SDK reported, reduced to what
// StatusError classifies. SDK adapters build it with FromResponse.
type StatusAnswer struct {
	Status int
	Header http.Header
	Body   []byte
}

func (s *StatusAnswer) Error() string { return fmt.Sprintf("HTTP %d", s.Status) }

// FromResponse reads a non-2xx answer an SDK kept (bounded by
// DefaultMaxBody). A nil response yields nil.
func FromResponse(resp *http.Response) *StatusAnswer {
	if resp == nil {
		return nil
	}
	var body []byte
	if resp.Body != nil {
		body, _, _ = readBounded(resp.Body, DefaultMaxBody)
	}
	return &StatusAnswer{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// errTooLarge is reported by a body wrapped with LimitBody past its limit.
var errTooLarge = errors.New("response body too large")

// LimitBody makes reading resp.Body fail once more than limit bytes (0:
// DefaultMaxBody) were read, so an SDK that reads whole bodies stays
// bounded. It is meant for an SDK's response middleware.
func LimitBody(resp *http.Response, limit int64) {
	if resp == nil || resp.Body == nil {
		return
	}
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	resp.Body = &limitedBody{rc: resp.Body, left: limit}
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errTooLarge
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// Call runs one SDK request under the per-call timeout and classifies its
// outcome (see the package doc). send returns the raw body of a 2xx answer,
// a *StatusAnswer for any other status, or the SDK's transport error; the
// body is then decoded into out (unless out is nil).
func (c *Client) Call(ctx context.Context, send func(context.Context) ([]byte, error), out any) error {
	if ctx.Err() != nil {
		return c.canceled(ctx)
	}
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if c.Timeout > 0 {
		callCtx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	defer cancel()

	body, err := send(callCtx)
	var sa *StatusAnswer
	switch {
	case errors.As(err, &sa):
		if err := c.StatusError(sa.Status, sa.Header, sa.Body, time.Now()); err != nil {
			return err
		}
		body = sa.Body
	case errors.Is(err, errTooLarge):
		limit := c.MaxBody
		if limit <= 0 {
			limit = DefaultMaxBody
		}
		return c.Errorf(c.failure(), "response body exceeds %d bytes", limit)
	case err != nil:
		var ne net.Error
		if ctx.Err() != nil || callCtx.Err() != nil || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return c.transportError(ctx, callCtx, "sending request", err)
		}
		var ue interface{ Timeout() bool }
		if errors.As(err, &ue) {
			return c.transportError(ctx, callCtx, "sending request", err)
		}
		return c.Errorf(c.failure(), "%v", err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return c.Errorf(c.failure(), "malformed response JSON: %v", err)
	}
	return nil
}
