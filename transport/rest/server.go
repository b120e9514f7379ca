// Package rest is Postgram's REST adapter: a gorilla/mux router that
// translates JSON requests into calls on *postgram.Client and the results
// (and errors, through transport/apierror) back into JSON. It holds no
// rule of its own: validation, access control and ranking live in the
// library, so REST answers exactly what MCP and the CLI answer.
//
// Every /api route needs "Authorization: Bearer <api key>"; the handler
// calls only the authenticated principal's view of the client (ClientFrom).
// /health is open. Wrap the server (and anything else mounted next to it)
// with RequestID, AccessLog and Recover:
//
//	srv := rest.New(rest.Config{Client: client, Logger: logger, Version: version})
//	handler := rest.RequestID(rest.AccessLog(logger)(rest.Recover(logger)(srv)))
//
// Route groups live one file per area (entities.go, search.go, queue.go,
// tasks.go, memory.go, sync.go, graph.go, health.go, openapi.go) and share the helpers of respond.go and decode.go;
// a new area adds a file with a routes method and registers it in New.
// Every route must also be described in openapi.json (a test checks it).
package rest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/backup"
	"github.com/postgram-go/postgram/feed"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/transport/requestlog"
	"github.com/postgram-go/postgram/workspaces"
)

// DefaultMaxBodyBytes bounds request bodies when Config.MaxBodyBytes is zero.
const DefaultMaxBodyBytes int64 = 4 << 20

// Authenticator turns a bearer token into the client view that acts for
// its principal. *postgram.Admin implements it (Admin.Authenticate):
// unknown, malformed and revoked keys return errors wrapping
// postgram.ErrUnauthorized.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*postgram.Client, error)
}

var _ Authenticator = (*postgram.Admin)(nil)

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	// Client is the library client: an unscoped one (New), the workspace's
	// operator view. Required.
	// /health uses it directly; /api routes use the view Auth returns.
	Client *postgram.Client
	// Logger receives internal-error and panic logs. Default: discard.
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body; larger bodies get 413
	// PAYLOAD_TOO_LARGE. Default DefaultMaxBodyBytes (4 MiB).
	MaxBodyBytes int64
	// MaxSyncBodyBytes bounds the bodies of the /api/sync routes, whose
	// upload batches carry up to 4 MiB of file content plus JSON escaping.
	// Default DefaultMaxSyncBodyBytes (32 MiB); never less than
	// MaxBodyBytes.
	MaxSyncBodyBytes int64
	// Version is reported by /health. Default "dev".
	Version string
	// Auth verifies bearer tokens. Default: Client.
	Auth Authenticator
	// Warnings are standing configuration warnings that /health reports
	// (for example "plain HTTP on a non-loopback address"). Default none.
	Warnings []string
	// MaxResponseBytes bounds an encoded response body: a larger one is
	// refused with a VALIDATION error telling the client to page (the
	// library's own budget, postgram.Config.MaxResultBytes, normally
	// refuses such pages first, naming the parameter). Default
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// BackupStatus, when set, reports the scheduled backups in /health.
	BackupStatus func() backup.Status
	// BackupList, when set, lists the scheduled backups
	// (GET /api/admin/backups).
	BackupList func() ([]backup.ScheduledFile, error)
	// Ingest runs POST /api/ingest and the /api/jobs routes; nil answers
	// them 503 UNAVAILABLE.
	Ingest *ingest.Service
	// Events serves GET /api/events and /api/events/ws. Default: a hub
	// over Client's workspace that is not Run (other servers' events
	// arrive at its poll's pace); the server command runs its own.
	Events *feed.Hub
	// Workspaces, when set, serves every workspace of the store: it
	// authenticates keys (unless Auth is set) and each request's events,
	// ingestion, backup and audit go to the workspace of its key. Client
	// (its default workspace's client) still answers /health. Ingest and
	// Events are then ignored.
	Workspaces *workspaces.Directory
}

// DefaultMaxResponseBytes is Config.MaxResponseBytes's default.
const DefaultMaxResponseBytes int64 = 32 << 20

// Server is the REST API as an http.Handler.
type Server struct {
	cfg Config
	// admin is the operator view of cfg.Client (health, backups, audit).
	admin  *postgram.Admin
	log    *slog.Logger
	router *mux.Router
	// handler is router behind Recover.
	handler http.Handler
	// api holds the routes that run behind authentication; register them
	// with their full path ("/api/...").
	api *mux.Router
	// feed serves the event streams; streams ends when CloseStreams is
	// called.
	feed         *feed.Hub
	streams      context.Context
	closeStreams context.CancelFunc
}

// New builds the server and registers every route. It panics when
// cfg.Client is nil (a programming error).
func New(cfg Config) *Server {
	if cfg.Client == nil {
		panic("rest: Config.Client is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxSyncBodyBytes <= 0 {
		cfg.MaxSyncBodyBytes = DefaultMaxSyncBodyBytes
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	adm, err := cfg.Client.Admin()
	if err != nil {
		panic("rest: Config.Client must be an unscoped client: " + err.Error())
	}
	if cfg.Auth == nil {
		cfg.Auth = adm
		if cfg.Workspaces != nil {
			cfg.Auth = cfg.Workspaces
		}
	}
	s := &Server{cfg: cfg, admin: adm, log: cfg.Logger, router: mux.NewRouter(), feed: cfg.Events}
	if s.feed == nil {
		s.feed = feed.New(adm, feed.Config{})
	}
	s.streams, s.closeStreams = context.WithCancel(context.Background())
	s.router.NotFoundHandler = http.HandlerFunc(s.notFound)
	s.router.MethodNotAllowedHandler = http.HandlerFunc(s.methodNotAllowed)
	// The authenticated group is a matcher-less subrouter whose routes
	// carry their full /api/... paths. (A PathPrefix subrouter would make
	// mux answer 404 instead of 405 for a wrong method on some paths: its
	// inherited prefix matcher clears the method-mismatch state.)
	s.api = s.router.NewRoute().Subrouter()
	s.api.Use(s.authenticate)

	// One call per area; each lives in its own file.
	s.healthRoutes()
	s.openAPIRoutes()
	s.entityRoutes()
	s.searchRoutes()
	s.queueRoutes()
	s.taskRoutes()   // tasks.go
	s.memoryRoutes() // memory.go
	s.syncRoutes()   // sync.go
	s.backupRoutes() // backup.go
	s.graphRoutes()
	s.ingestRoutes() // ingest.go
	s.eventRoutes()  // events.go
	s.handler = Recover(s.log)(s.router)
	return s
}

// workspaceOf returns the operator view, event hub and ingestion service
// (nil when off) of the workspace c acts in.
func (s *Server) workspaceOf(ctx context.Context, c *postgram.Client) (*postgram.Admin, *feed.Hub, *ingest.Service, error) {
	if s.cfg.Workspaces == nil {
		if c.Workspace() != s.admin.Workspace() {
			return nil, nil, nil, fmt.Errorf("this server serves workspace %q, not %q: %w", s.admin.Workspace(), c.Workspace(), postgram.ErrForbidden)
		}
		return s.admin, s.feed, s.cfg.Ingest, nil
	}
	w, err := s.cfg.Workspaces.Get(ctx, c.Workspace())
	if err != nil {
		return nil, nil, nil, err
	}
	return w.Admin, w.Events, w.Ingest, nil
}

// Router exposes the router so that more handlers can be mounted next to
// the API (for example /mcp by the server command). Routes added to it
// directly are NOT behind the API's authentication; API routes belong in
// this package, registered on the authenticated group and described in
// openapi.json.
func (s *Server) Router() *mux.Router { return s.router }

// ServeHTTP implements http.Handler. A panic in a handler becomes a 500
// envelope even when the caller did not wrap the server with Recover.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

type clientKey struct{}

// ClientFrom returns the authenticated client view that the auth
// middleware put into ctx, or nil outside an authenticated request.
func ClientFrom(ctx context.Context) *postgram.Client {
	c, _ := ctx.Value(clientKey{}).(*postgram.Client)
	return c
}

// WithClient returns a context carrying c as the authenticated client (for
// adapters that authenticate differently and reuse these handlers).
func WithClient(ctx context.Context, c *postgram.Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// authenticate requires "Authorization: Bearer <key>" and puts the
// principal's client view into the request context.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		token, msg := bearerToken(r.Header.Values("Authorization"))
		if msg != "" {
			s.writeError(w, r, &apierror.ResponseError{Body: apierror.Body{Code: apierror.Unauthorized, Message: msg}})
			return
		}
		c, err := s.cfg.Auth.Authenticate(r.Context(), token)
		if err == nil && c == nil {
			err = postgram.ErrUnauthorized
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if p := c.Principal(); p != nil {
			requestlog.SetKeyID(r.Context(), p.KeyID)
		}
		next.ServeHTTP(w, r.WithContext(WithClient(r.Context(), c)))
	})
}

// bearerToken extracts the token of an Authorization header, or returns a
// message naming what is wrong with it.
func bearerToken(values []string) (token, problem string) {
	switch {
	case len(values) == 0:
		return "", "missing Authorization header"
	case len(values) > 1:
		return "", "more than one Authorization header"
	}
	v := strings.TrimSpace(values[0])
	if v == "" {
		return "", "empty Authorization header; expected \"Bearer <api key>\""
	}
	scheme, rest, _ := strings.Cut(v, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		if len(scheme) > 20 {
			scheme = scheme[:20] + "…"
		}
		return "", "unsupported Authorization scheme " + quoteScheme(scheme) + "; expected \"Bearer <api key>\""
	}
	token = strings.TrimSpace(rest)
	if token == "" {
		return "", "Authorization header has no bearer token; expected \"Bearer <api key>\""
	}
	if strings.ContainsAny(token, " \t") {
		return "", "malformed bearer token: it contains whitespace"
	}
	return token, ""
}

// quoteScheme quotes a client-sent scheme for a message, replacing bytes
// that are not printable ASCII.
func quoteScheme(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return "\"" + string(b) + "\""
}

// notFound answers unknown routes with the NOT_FOUND envelope.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	apierror.Write(w, apierror.New(apierror.NotFound, "no route for "+r.Method+" "+truncatePath(r.URL.Path), nil))
}

// probeMethods are the methods tried when computing an Allow header.
var probeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// methodNotAllowed answers a known path with the wrong method: 405 with
// an Allow header listing the methods the path accepts.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range probeMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		var match mux.RouteMatch
		if s.router.Match(probe, &match) && match.MatchErr == nil {
			allow = append(allow, m)
		}
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	apierror.Write(w, apierror.New(apierror.MethodNotAllowed,
		"method "+r.Method+" is not allowed on "+truncatePath(r.URL.Path)+"; allowed: "+strings.Join(allow, ", "),
		map[string]any{"allow": allow}))
}

func truncatePath(p string) string {
	if len(p) > 200 {
		return p[:200] + "…"
	}
	return p
}
