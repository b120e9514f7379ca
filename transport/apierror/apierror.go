// Package apierror is the one table that maps the library's errors to the
// wire: the REST error envelope {"error":{"code","message","details"}} with
// its HTTP status, MCP tool errors (the same envelope with isError) and the
// pgm CLI's exit codes. Every adapter maps errors here, once.
package apierror

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/postgram-go/postgram"
)

// Code is a machine-readable error code.
type Code string

// Error codes (DESIGN.md §5).
const (
	Validation       Code = "VALIDATION"
	Unauthorized     Code = "UNAUTHORIZED"
	Forbidden        Code = "FORBIDDEN"
	NotFound         Code = "NOT_FOUND"
	MethodNotAllowed Code = "METHOD_NOT_ALLOWED"
	Conflict         Code = "CONFLICT"
	PayloadTooLarge  Code = "PAYLOAD_TOO_LARGE"
	RateLimited      Code = "RATE_LIMITED"
	EmbeddingFailed  Code = "EMBEDDING_FAILED"
	Unavailable      Code = "UNAVAILABLE"
	Internal         Code = "INTERNAL"
)

// entry is one row of the table.
type entry struct {
	code   Code
	status int
	exit   int // pgm exit code
}

// table lists codes with their HTTP status and CLI exit code. Exit codes:
// 0 success, 1 unexpected/internal, 2 usage or validation, 3 unreachable
// server or unavailable, 4 unauthorized, 5 forbidden, 6 not found,
// 7 conflict, 8 rate limited, 9 embedding failed.
var table = []entry{
	{Validation, http.StatusBadRequest, 2},
	{Unauthorized, http.StatusUnauthorized, 4},
	{Forbidden, http.StatusForbidden, 5},
	{NotFound, http.StatusNotFound, 6},
	{MethodNotAllowed, http.StatusMethodNotAllowed, 2},
	{Conflict, http.StatusConflict, 7},
	{PayloadTooLarge, http.StatusRequestEntityTooLarge, 2},
	{RateLimited, http.StatusTooManyRequests, 8},
	{EmbeddingFailed, http.StatusBadGateway, 9},
	{Unavailable, http.StatusServiceUnavailable, 3},
	{Internal, http.StatusInternalServerError, 1},
}

// Exit codes of the pgm CLI beyond the table.
const (
	ExitOK          = 0
	ExitInternal    = 1
	ExitUsage       = 2
	ExitUnreachable = 3
)

func lookup(c Code) entry {
	for _, e := range table {
		if e.code == c {
			return e
		}
	}
	return table[len(table)-1]
}

// Status is the HTTP status of code c.
func (c Code) Status() int { return lookup(c).status }

// ExitCode is the pgm exit code of code c.
func (c Code) ExitCode() int { return lookup(c).exit }

// Body is the error envelope's inner object.
type Body struct {
	Code    Code           `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Envelope is the JSON error envelope.
type Envelope struct {
	Error Body `json:"error"`
}

// ResponseError is an error envelope received by a client, as a Go error.
type ResponseError struct {
	Status int
	Body   Body
}

func (e *ResponseError) Error() string { return string(e.Body.Code) + ": " + e.Body.Message }

// Status is the HTTP status for the envelope's code.
func (e *Envelope) Status() int { return e.Error.Code.Status() }

// From classifies err. Errors of unknown kind are INTERNAL with a generic
// message, so internals never leak; callers log the original. A store's
// failure (*postgram.BackendError) is told by its public message only: the
// driver's text (SQL, values, host names, file paths) never reaches a
// client. A timeout says so without naming the operation's internals.
func From(err error) *Envelope {
	env := classify(err)
	var be *postgram.BackendError
	if env != nil && errors.As(err, &be) && env.Error.Code != Internal {
		env.Error.Message = be.Public
		env.Error.Details = nil
	}
	return env
}

func classify(err error) *Envelope {
	b := Body{Code: Internal, Message: "internal error"}
	var fe *postgram.FieldError
	var ce *postgram.ConflictError
	var re *ResponseError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re):
		return &Envelope{Error: re.Body}
	case errors.As(err, &fe):
		b = Body{Code: Validation, Message: fe.Error(), Details: map[string]any{"field": fe.Field}}
	case errors.As(err, &ce):
		b = Body{Code: Conflict, Message: ce.Error()}
		if ce.Current != nil {
			b.Details = map[string]any{"current": ce.Current}
		}
	case errors.Is(err, postgram.ErrInvalidArgument):
		b = Body{Code: Validation, Message: err.Error()}
	case errors.Is(err, postgram.ErrUnauthorized):
		b = Body{Code: Unauthorized, Message: err.Error()}
	case errors.Is(err, postgram.ErrForbidden):
		b = Body{Code: Forbidden, Message: err.Error()}
	case errors.Is(err, postgram.ErrNotFound):
		b = Body{Code: NotFound, Message: err.Error()}
	case errors.Is(err, postgram.ErrConflict):
		b = Body{Code: Conflict, Message: err.Error()}
	case errors.Is(err, postgram.ErrRateLimited):
		b = Body{Code: RateLimited, Message: err.Error()}
	case errors.Is(err, postgram.ErrEmbeddingFailed):
		b = Body{Code: EmbeddingFailed, Message: err.Error()}
	case errors.Is(err, postgram.ErrUnavailable), errors.Is(err, postgram.ErrModelMismatch):
		b = Body{Code: Unavailable, Message: err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		b = Body{Code: Unavailable, Message: "the operation did not finish in time; try again"}
	case errors.Is(err, context.Canceled):
		b = Body{Code: Unavailable, Message: "request canceled"}
	}
	return &Envelope{Error: b}
}

// New builds an envelope.
func New(code Code, message string, details map[string]any) *Envelope {
	return &Envelope{Error: Body{Code: code, Message: message, Details: details}}
}

// JSON renders the envelope.
func (e *Envelope) JSON() []byte {
	b, err := json.Marshal(e)
	if err != nil {
		return []byte(`{"error":{"code":"INTERNAL","message":"internal error"}}`)
	}
	return b
}

// Write writes the envelope as an HTTP response.
func Write(w http.ResponseWriter, e *Envelope) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status())
	_, _ = w.Write(append(e.JSON(), '\n'))
}

// Codes lists every code (for documentation and tests).
func Codes() []Code {
	out := make([]Code, len(table))
	for i, e := range table {
		out[i] = e.code
	}
	return out
}
