package rest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/transport/requestlog"
)

// RequestIDHeader carries the request id in both directions.
const RequestIDHeader = "X-Request-ID"

type requestIDKey struct{}

// RequestIDFrom returns the request id RequestID put into ctx, or "".
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// RequestID gives every request an id: a sane incoming X-Request-ID (1-128
// characters of letters, digits and ._:-) is kept, anything else is
// replaced by a fresh one. The id is set on the response header and put
// into the request context (RequestIDFrom) for logs.
func RequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !saneRequestID(id) {
			id = uuid.NewString()
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

func saneRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// AccessLog logs one line per request through logger: method, path (never
// the query string, which may carry an apiKey, and never headers), status,
// response bytes, duration, request id and, for an authenticated request,
// the API key's id (recorded through package requestlog by the REST API's
// and the MCP endpoint's authentication). 5xx responses log at level
// Error, others at Info.
func AccessLog(logger *slog.Logger) func(http.Handler) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ctx, st := requestlog.NewContext(r.Context())
			sw := &statusWriter{ResponseWriter: w}
			path := r.URL.Path
			if len(path) > 1024 {
				path = path[:1024] + "…"
			}
			defer func() {
				status := sw.status
				if status == 0 {
					// Nothing written: net/http answers 200, unless a
					// panic is unwinding (then the connection is cut).
					status = http.StatusOK
				}
				level := slog.LevelInfo
				if status >= 500 {
					level = slog.LevelError
				}
				attrs := []slog.Attr{
					slog.String("method", r.Method),
					slog.String("path", path),
					slog.Int("status", status),
					slog.Int64("bytes", sw.bytes),
					slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
					slog.String("request_id", RequestIDFrom(r.Context())),
				}
				if k := st.KeyID(); k != "" {
					attrs = append(attrs, slog.String("key_id", k))
				}
				logger.LogAttrs(r.Context(), level, "http request", attrs...)
			}()
			next.ServeHTTP(sw, r.WithContext(ctx))
		})
	}
}

// Recover turns a panic in next into a 500 INTERNAL envelope (when nothing
// was written yet) and logs it with its stack and the request id; the
// server keeps running. http.ErrAbortHandler is re-panicked, as net/http
// intends.
func Recover(logger *slog.Logger) func(http.Handler) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sw := &statusWriter{ResponseWriter: w}
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler {
					panic(v)
				}
				logger.LogAttrs(r.Context(), slog.LevelError, "panic serving request",
					slog.String("panic", fmt.Sprint(v)),
					slog.String("method", r.Method),
					slog.String("path", r.URL.Path),
					slog.String("request_id", RequestIDFrom(r.Context())),
					slog.String("stack", string(debug.Stack())))
				if sw.status == 0 {
					apierror.Write(sw, apierror.New(apierror.Internal, "internal error", nil))
				}
			}()
			next.ServeHTTP(sw, r)
		})
	}
}

// statusWriter records the status and size of a response. Unwrap lets
// http.ResponseController reach the underlying writer (Flush, deadlines).
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush implements http.Flusher when the underlying writer does.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WriteDeadline bounds the time a response takes to reach the client,
// so that a client that stops reading cannot hold a connection, a
// goroutine and a response buffer forever. The deadline (now + d) is set
// when the handler starts writing, so a slow computation is not cut, and
// pushed forward on every Flush, so a streamed response (MCP's Streamable
// HTTP, server-sent events) keeps working as long as each chunk is
// delivered within d. A non-positive d turns it off.
func WriteDeadline(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if d <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d}
			next.ServeHTTP(dw, r)
			// What the server still buffers is flushed after the handler
			// returns: bound that too.
			dw.extend()
		})
	}
}

// deadlineWriter sets the write deadline on the first write and on every
// flush.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	d       time.Duration
	started bool
}

func (w *deadlineWriter) extend() {
	// Writers that cannot take deadlines (httptest recorders) are fine.
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
}

func (w *deadlineWriter) start() {
	if !w.started {
		w.started = true
		w.extend()
	}
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.start()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.start()
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher, pushing the deadline forward.
func (w *deadlineWriter) Flush() {
	w.extend()
	_ = w.rc.Flush()
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
