package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/transport/requestlog"
)

// Authenticator verifies an API key and returns the client that acts for
// it. *postgram.Admin implements it. Unknown, malformed and revoked keys
// must return an error wrapping postgram.ErrUnauthorized.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*postgram.Client, error)
}

var _ Authenticator = (*postgram.Admin)(nil)

type clientKey struct{}

// WithClient returns a context whose tool calls act as c. HTTPHandler
// does it for every authenticated request; an embedder that authenticates
// its own way can do the same.
func WithClient(ctx context.Context, c *postgram.Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// clientFrom returns the client put in ctx by WithClient.
func clientFrom(ctx context.Context) (*postgram.Client, bool) {
	c, ok := ctx.Value(clientKey{}).(*postgram.Client)
	return c, ok && c != nil
}

// MaxRequestBytes bounds an MCP HTTP request body: an entity's content may
// be 1 MiB, which JSON escaping can inflate.
const MaxRequestBytes = 8 << 20

// HTTPOption configures HTTPHandler.
type HTTPOption func(*httpHandler)

// WithResourceMetadata names the OAuth protected-resource metadata
// (RFC 9728) in the WWW-Authenticate header of every 401, so that an MCP
// client can discover the authorization server and sign in.
func WithResourceMetadata(url string) HTTPOption {
	return func(h *httpHandler) { h.resourceMetadata = url }
}

// HTTPHandler serves srv over Streamable HTTP. Each request must carry an
// API key, as "Authorization: Bearer <key>" or the query parameter
// "apiKey"; a missing, malformed, unknown or revoked key gets HTTP 401 with
// the error envelope, and tools act as the key's client (its scopes, types
// and visibilities).
//
// The handler is stateless: it keeps no MCP session state, issues no
// session ids and offers no GET event stream (405), so any replica can
// serve any request. It accepts POST (JSON-RPC messages) and DELETE
// (session end, a no-op); other methods get 405 with the envelope. Bodies
// over MaxRequestBytes get 413.
//
// mcp-go's DNS-rebinding guard (which rejects loopback connections whose
// Host header is not localhost) is off: every request must carry a key
// that a rebinding web page cannot know, and the guard would break a
// reverse proxy on the same host that forwards the public Host header.
func HTTPHandler(srv *server.MCPServer, auth Authenticator, logger *slog.Logger, opts ...HTTPOption) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	streamable := server.NewStreamableHTTPServer(srv,
		server.WithStateLess(true),
		server.WithDisableStreaming(true),
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(logger),
		// The request context already carries the client (see ServeHTTP);
		// copying it explicitly keeps tools working should mcp-go ever
		// derive the call context from elsewhere.
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			if c, ok := clientFrom(r.Context()); ok {
				return WithClient(ctx, c)
			}
			return ctx
		}),
	)
	h := &httpHandler{next: streamable, auth: auth, log: logger}
	for _, o := range opts {
		o(h)
	}
	return h
}

type httpHandler struct {
	next             http.Handler
	auth             Authenticator
	log              *slog.Logger
	resourceMetadata string
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost, http.MethodDelete:
	default:
		w.Header().Set("Allow", "POST, DELETE")
		apierror.Write(w, apierror.New(apierror.MethodNotAllowed, fmt.Sprintf(
			"method %s is not allowed on the MCP endpoint: POST JSON-RPC messages (the endpoint is stateless and offers no GET stream)",
			r.Method), nil))
		return
	}
	token, problem := credentials(r)
	if problem != "" {
		h.unauthorized(w, problem, false)
		return
	}
	c, err := h.auth.Authenticate(r.Context(), token)
	if err != nil {
		env := apierror.From(err)
		switch env.Error.Code {
		case apierror.Unauthorized:
			h.unauthorized(w, env.Error.Message, true)
		case apierror.Internal:
			h.log.ErrorContext(r.Context(), "mcp: authentication failed", "err", err)
			apierror.Write(w, env)
		default:
			apierror.Write(w, env)
		}
		return
	}
	if p := c.Principal(); p != nil {
		requestlog.SetKeyID(r.Context(), p.KeyID)
	}
	if r.ContentLength > MaxRequestBytes {
		apierror.Write(w, apierror.New(apierror.PayloadTooLarge, fmt.Sprintf(
			"request body is %d bytes; the maximum is %d", r.ContentLength, MaxRequestBytes), nil))
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBytes)
	}
	h.next.ServeHTTP(w, r.WithContext(WithClient(r.Context(), c)))
}

// unauthorized answers 401; with OAuth on, the challenge names the
// resource metadata (and invalid_token when a token was refused).
func (h *httpHandler) unauthorized(w http.ResponseWriter, msg string, invalidToken bool) {
	c := `Bearer realm="postgram"`
	if h.resourceMetadata != "" {
		c += `, resource_metadata="` + h.resourceMetadata + `"`
		if invalidToken {
			c += `, error="invalid_token"`
		}
	}
	w.Header().Set("WWW-Authenticate", c)
	apierror.Write(w, apierror.New(apierror.Unauthorized, msg, nil))
}

// credentials extracts the API key from the Authorization header (Bearer)
// or the apiKey query parameter. problem explains a missing or malformed
// credential.
func credentials(r *http.Request) (token, problem string) {
	if hs := r.Header.Values("Authorization"); len(hs) > 0 {
		if len(hs) > 1 {
			return "", "malformed Authorization: send exactly one header, \"Authorization: Bearer <api key>\""
		}
		scheme, tok, ok := strings.Cut(strings.TrimSpace(hs[0]), " ")
		tok = strings.TrimSpace(tok)
		if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
			return "", "malformed Authorization header: expected \"Bearer <api key>\""
		}
		return tok, ""
	}
	if vs, ok := r.URL.Query()["apiKey"]; ok {
		if len(vs) != 1 || strings.TrimSpace(vs[0]) == "" {
			return "", "malformed apiKey query parameter: give exactly one non-empty key"
		}
		return strings.TrimSpace(vs[0]), ""
	}
	return "", "missing API key: send \"Authorization: Bearer <api key>\" or the apiKey query parameter"
}
