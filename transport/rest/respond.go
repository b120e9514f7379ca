package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
)

// writeJSON writes v as a JSON response with status.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.writeError(w, r, err)
		return
	}
	if int64(buf.Len()) > s.cfg.MaxResponseBytes {
		s.writeError(w, r, envelopeError(apierror.Validation, fmt.Sprintf(
			"the response would be %d bytes, more than the %d this server sends: request fewer items (limit, max_nodes) and page with offset",
			buf.Len(), s.cfg.MaxResponseBytes), map[string]any{"max_response_bytes": s.cfg.MaxResponseBytes}))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// writeError writes err as the error envelope (apierror.From classifies
// it). Internal errors are logged with the request id, since their message
// is hidden from the client; unavailable dependencies are logged as
// warnings.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	env := apierror.From(err)
	if env == nil {
		env = apierror.New(apierror.Internal, "internal error", nil)
	}
	switch env.Error.Code {
	case apierror.Internal:
		s.log.LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("request_id", RequestIDFrom(r.Context())), slog.String("err", errString(err)))
	case apierror.Unavailable:
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "dependency unavailable",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("request_id", RequestIDFrom(r.Context())), slog.String("err", errString(err)))
	case apierror.Unauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="postgram"`)
	case apierror.PayloadTooLarge:
		// The rest of the body is not read: do not reuse the connection.
		w.Header().Set("Connection", "close")
	}
	apierror.Write(w, env)
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// invalid builds a VALIDATION error naming field, in the library's own
// error type so that the envelope carries details.field.
func invalid(field, message string) error {
	return &postgram.FieldError{Field: field, Message: message}
}

// envelopeError builds an error that apierror renders as exactly this
// envelope body (for errors that originate in the transport).
func envelopeError(code apierror.Code, message string, details map[string]any) error {
	return &apierror.ResponseError{Status: code.Status(), Body: apierror.Body{Code: code, Message: message, Details: details}}
}
