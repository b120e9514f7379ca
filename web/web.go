// Package web is the browser front end served by postgram-server at "/":
// server-rendered html/template pages with their assets embedded by
// go:embed, so nothing is installed or built at run time. It is a thin
// adapter over the library, like transport/rest and transport/mcp.
//
// Every response carries a strict Content-Security-Policy (scripts only
// from this origin, no inline scripts), X-Frame-Options DENY and
// X-Content-Type-Options nosniff. The only script library is htmx,
// vendored and pinned under static/vendor with its licence.
//
// Sign-in: when Config.Users is set, the app is behind a signed-in
// session. The first visit leads to /setup, where the bootstrap admin API
// key (printed by the server at its first start) creates the first user, an
// admin; passwords are hashed with argon2id. Sessions are random tokens in
// an HttpOnly, SameSite=Strict cookie (Secure under TLS) whose SHA-256 is
// stored; every form carries a CSRF token; failed sign-ins lock the account
// for a while and are limited per client address; sign-out can end every
// session of the user. The knowledge browser and the admin console follow
// (issue 19).
package web

import (
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/oauth"
	"github.com/postgram-go/postgram/web/password"
)

// CSP is the Content-Security-Policy sent with every response.
const CSP = "default-src 'self'; script-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// HTMXVersion is the pinned version of the vendored htmx (static/vendor).
const HTMXVersion = "2.0.11"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config configures the web handler.
type Config struct {
	// Logger receives render errors. Default: slog.Default().
	Logger *slog.Logger
	// Version is shown in the page footer. Default: "dev".
	Version string

	// Users stores web-app users and sessions; nil serves only the
	// landing page (no sign-in). Admin verifies the admin API key that
	// guards onboarding; required with Users.
	Users driver.UserStorage
	Admin *postgram.Admin
	// Password sets argon2id's costs; zero takes the defaults.
	Password password.Params
	// SessionTTL is how long a session lasts. Default: 12h.
	SessionTTL time.Duration
	// MaxFailedLogins failed sign-ins in a row lock an account for
	// LockFor. Defaults: 5 and 15 minutes.
	MaxFailedLogins int
	LockFor         time.Duration
	// MaxFailuresPerIP bounds failed sign-ins per client address per
	// minute. Default: 20.
	MaxFailuresPerIP int
	// SecureCookies marks cookies Secure even when the request did not
	// arrive over TLS (behind a TLS-terminating proxy).
	SecureCookies bool
	// Now is the clock. Default: time.Now.
	Now func() time.Time
	// Settings are shown read-only in the admin console (secrets already
	// masked by the caller). Backups, when set, lists scheduled backups.
	Settings []Setting
	Backups  func(ctx context.Context) ([]BackupFile, error)
	// OAuth, when set (OAUTH_ENABLED), is the authorization server whose
	// consent page (/oauth/authorize) and clients console (/admin/oauth)
	// the app serves.
	OAuth *oauth.Server
}

// Handler serves the web app. Create it with New.
type Handler struct {
	log      *slog.Logger
	version  string
	tmpl     *template.Template
	static   http.Handler
	mux      *http.ServeMux
	auth     *signIn // nil without Config.Users
	md       *markdown
	settings []Setting
	backups  backupLister
	oauth    *oauth.Server
}

// New parses the embedded templates and returns the handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	tmpl, err := template.New("").Funcs(template.FuncMap{"when": when, "bytes": bytesHuman}).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("web: parse templates: %w", err)
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("web: static assets: %w", err)
	}
	h := &Handler{log: cfg.Logger, version: cfg.Version, tmpl: tmpl, md: newMarkdown(), settings: cfg.Settings, backups: cfg.Backups, oauth: cfg.OAuth,
		static: http.StripPrefix("/static/", http.FileServerFS(sub)), mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /{$}", h.index)
	h.mux.Handle("GET /static/", h.static)
	h.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	if cfg.Users != nil {
		if cfg.Admin == nil {
			return nil, fmt.Errorf("web: Config.Users needs Config.Admin (it verifies the setup key)")
		}
		if cfg.Now == nil {
			cfg.Now = time.Now
		}
		h.auth = &signIn{log: cfg.Logger, users: cfg.Users, admin: cfg.Admin, params: cfg.Password, ttl: orDuration(cfg.SessionTTL, 12*time.Hour),
			maxFail: orInt(cfg.MaxFailedLogins, 5), lockFor: orDuration(cfg.LockFor, 15*time.Minute),
			secure: cfg.SecureCookies, now: cfg.Now, perIP: newFailureLimiter(orInt(cfg.MaxFailuresPerIP, 20))}
		h.mux.HandleFunc("GET /setup", h.setupForm)
		h.mux.HandleFunc("POST /setup", h.setup)
		h.mux.HandleFunc("GET /login", h.loginForm)
		h.mux.HandleFunc("POST /login", h.login)
		h.mux.HandleFunc("POST /logout", h.logout)
		h.mux.HandleFunc("GET /search", h.search)
		h.mux.HandleFunc("GET /entities/{id}", h.entity)
		h.mux.HandleFunc("POST /entities/{id}", h.updateEntity)
		h.mux.HandleFunc("POST /entities/{id}/{action}", h.archiveEntity)
		h.mux.HandleFunc("GET /new", h.newEntityForm)
		h.mux.HandleFunc("POST /new", h.createEntity)
		h.mux.HandleFunc("GET /users", h.usersList)
		h.mux.HandleFunc("POST /users", h.createUser)
		h.mux.HandleFunc("POST /users/{id}/delete", h.deleteUser)
		h.mux.HandleFunc("GET /account", h.account)
		h.mux.HandleFunc("POST /account/password", h.changePassword)
		h.mux.HandleFunc("POST /account/totp", h.totpStart)
		h.mux.HandleFunc("POST /account/totp/enable", h.totpEnable)
		h.mux.HandleFunc("POST /account/totp/disable", h.totpDisable)
		h.mux.HandleFunc("GET /admin", h.console)
		h.mux.HandleFunc("GET /admin/keys", h.keys)
		h.mux.HandleFunc("POST /admin/keys", h.createKey)
		h.mux.HandleFunc("POST /admin/keys/{id}/revoke", h.revokeKey)
		h.mux.HandleFunc("GET /admin/audit", h.auditLog)
		h.mux.HandleFunc("GET /entities/{id}/graph", h.graph)
		h.mux.HandleFunc("GET /entities/{id}/graph.json", h.graphData)
		h.mux.HandleFunc("GET /tasks", h.tasks)
		h.mux.HandleFunc("POST /tasks", h.createTask)
		h.mux.HandleFunc("POST /tasks/{id}/move", h.moveTask)
		h.mux.HandleFunc("GET /memory", h.memory)
		h.mux.HandleFunc("POST /memory/groom", h.groomArchive)
		h.mux.HandleFunc("GET /admin/maintenance", h.maintenance)
		h.mux.HandleFunc("POST /admin/maintenance/prune", h.pruneEdges)
		h.mux.HandleFunc("POST /admin/maintenance/model", h.switchModel)
		h.mux.HandleFunc("POST /admin/maintenance/reembed", h.reembed)
		h.mux.HandleFunc("GET /map", h.embeddingMap)
		h.mux.HandleFunc("GET /sync", h.syncRepos)
		h.mux.HandleFunc("POST /admin/queue/retry", h.retryQueue)
		h.mux.HandleFunc("GET /oauth/authorize", h.oauthAuthorize)
		h.mux.HandleFunc("POST /oauth/authorize", h.oauthConsent)
		h.mux.HandleFunc("GET /admin/oauth", h.oauthConsole)
		h.mux.HandleFunc("POST /admin/oauth/{what}/{id}/revoke", h.oauthRevoke)
	}
	return h, nil
}

func orDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func orInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// Paths lists the mux patterns the handler owns, for mounting beside
// other handlers (postgram-server mounts /api, /mcp and /health apart).
func Paths() []string {
	return []string{"GET /{$}", "GET /static/", "GET /favicon.ico", "GET /setup", "POST /setup", "GET /login", "POST /login",
		"POST /logout", "GET /search", "GET /entities/{id}", "POST /entities/{id}", "POST /entities/{id}/{action}",
		"GET /new", "POST /new", "GET /users", "POST /users", "POST /users/{id}/delete", "GET /account",
		"POST /account/password", "POST /account/totp", "POST /account/totp/enable", "POST /account/totp/disable",
		"GET /admin", "GET /admin/keys", "POST /admin/keys", "POST /admin/keys/{id}/revoke", "GET /admin/audit",
		"GET /entities/{id}/graph", "GET /entities/{id}/graph.json", "GET /tasks", "POST /tasks", "POST /tasks/{id}/move",
		"GET /memory", "POST /memory/groom", "GET /admin/maintenance", "POST /admin/maintenance/prune",
		"POST /admin/maintenance/model", "POST /admin/maintenance/reembed",
		"GET /map", "GET /sync", "POST /admin/queue/retry", "GET /oauth/authorize", "POST /oauth/authorize",
		"GET /admin/oauth", "POST /admin/oauth/{what}/{id}/revoke"}
}

// ServeHTTP sets the security headers and dispatches.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
		http.Error(w, "a state-changing request must come from this site", http.StatusForbidden)
		return
	}
	h.mux.ServeHTTP(w, r)
}

type page struct {
	Title   string
	Version string
	HTMX    string
	// Signed-in pages.
	User string
	Role string
	CSRF string
	// Forms.
	Error string
	Name  string
	// Next is where sign-in returns to (a local path).
	Next string
}

func (h *Handler) page(title string) page {
	return page{Title: title, Version: h.version, HTMX: HTMXVersion}
}

func (h *Handler) index(w http.ResponseWriter, r *http.Request) {
	p := h.page("Postgram")
	if h.auth != nil {
		n, err := h.auth.users.CountUsers(r.Context())
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if n == 0 {
			http.Redirect(w, r, "/setup", http.StatusSeeOther)
			return
		}
		cur, err := h.auth.session(r)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if cur == nil {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		p.User, p.Role, p.CSRF = cur.user.Name, string(cur.user.Role), cur.session.CSRF
	}
	h.render(w, r, "index.html", p)
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	h.log.ErrorContext(r.Context(), "web: request failed", "path", r.URL.Path, "err", err)
	http.Error(w, "the server could not answer; try again", http.StatusServiceUnavailable)
}

// maxFormBytes bounds a posted form.
const maxFormBytes = 16 << 10

func parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form is malformed or larger than 16 KiB", http.StatusBadRequest)
		return false
	}
	return true
}

func (h *Handler) setupForm(w http.ResponseWriter, r *http.Request) {
	if n, err := h.auth.users.CountUsers(r.Context()); err != nil {
		h.fail(w, r, err)
		return
	} else if n > 0 {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	p := h.page("Set up Postgram")
	p.CSRF = h.auth.formToken(w, r)
	h.render(w, r, "setup.html", p)
}

func (h *Handler) setup(w http.ResponseWriter, r *http.Request) {
	if !h.signInForm(w, r) {
		return
	}
	addr, now := clientAddr(r), h.auth.now()
	if h.auth.perIP.blocked(addr, now) {
		http.Error(w, "too many failed attempts from this address: wait a minute", http.StatusTooManyRequests)
		return
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	u, msg := h.auth.createFirstAdmin(r.Context(), r.PostFormValue("admin_key"), name, r.PostFormValue("password"), r.PostFormValue("confirm"))
	if u == nil {
		if strings.HasPrefix(msg, "admin_key") {
			h.auth.perIP.fail(addr, now)
		}
		p := h.page("Set up Postgram")
		p.CSRF, p.Error, p.Name = h.auth.formToken(w, r), msg, name
		w.WriteHeader(http.StatusBadRequest)
		h.render(w, r, "setup.html", p)
		return
	}
	if err := h.auth.startSession(w, r, u); err != nil {
		h.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signInForm parses a form posted before a session exists (setup, sign-in)
// and checks its CSRF token against the pre-session cookie.
func (h *Handler) signInForm(w http.ResponseWriter, r *http.Request) bool {
	if !parseForm(w, r) {
		return false
	}
	if !checkFormToken(r) {
		http.Error(w, staleForm, http.StatusForbidden)
		return false
	}
	return true
}

// staleForm answers a form whose CSRF token does not match.
const staleForm = "the form expired or did not come from this site: reload the page"

func (h *Handler) loginForm(w http.ResponseWriter, r *http.Request) {
	p := h.page("Sign in")
	p.CSRF = h.auth.formToken(w, r)
	if next := r.URL.Query().Get("next"); validNext(next) {
		p.Next = next
	}
	h.render(w, r, "login.html", p)
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if !h.signInForm(w, r) {
		return
	}
	addr, now := clientAddr(r), h.auth.now()
	name := strings.TrimSpace(r.PostFormValue("name"))
	p := h.page("Sign in")
	if next := r.PostFormValue("next"); validNext(next) {
		p.Next = next
	}
	if h.auth.perIP.blocked(addr, now) {
		p.CSRF, p.Error, p.Name = h.auth.formToken(w, r), "too many failed sign-ins from this address: wait a minute", name
		w.WriteHeader(http.StatusTooManyRequests)
		h.render(w, r, "login.html", p)
		return
	}
	u, msg, err := h.auth.login(r, name, r.PostFormValue("password"), r.PostFormValue("code"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if u == nil {
		h.auth.perIP.fail(addr, now)
		p.CSRF, p.Error, p.Name = h.auth.formToken(w, r), msg, name
		w.WriteHeader(http.StatusUnauthorized)
		h.render(w, r, "login.html", p)
		return
	}
	if err := h.auth.startSession(w, r, u); err != nil {
		h.fail(w, r, err)
		return
	}
	to := "/"
	if p.Next != "" {
		to = p.Next
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if !parseForm(w, r) {
		return
	}
	cur, err := h.auth.session(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if cur == nil {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	if !checkSessionToken(r, cur) {
		http.Error(w, staleForm, http.StatusForbidden)
		return
	}
	if r.PostFormValue("everywhere") != "" {
		_, err = h.auth.users.DeleteUserSessions(r.Context(), cur.user.ID)
	} else {
		err = h.auth.users.DeleteSession(r.Context(), cur.session.TokenHash)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	http.SetCookie(w, h.auth.cookie(r, sessionCookie, "", -1))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func (h *Handler) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := h.tmpl.ExecuteTemplate(w, name, data); err != nil {
		h.log.ErrorContext(r.Context(), "web: render", "template", name, "err", err)
	}
}

// sameOrigin reports whether a state-changing request comes from this
// site: browsers send Sec-Fetch-Site (refused unless same-origin, or none
// for a typed address) and Origin (refused unless it names this host).
// Requests without either (curl, tests) pass; they carry no cookie a
// forger could borrow, and the forms' CSRF tokens still apply.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}
