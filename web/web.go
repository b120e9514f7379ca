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
// This first slice serves the landing page and the static assets; sign-in,
// onboarding and the knowledge browser follow (issue 19).
package web

import (
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
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
}

// Handler serves the web app. Create it with New.
type Handler struct {
	log     *slog.Logger
	version string
	tmpl    *template.Template
	static  http.Handler
	mux     *http.ServeMux
}

// New parses the embedded templates and returns the handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	tmpl, err := template.New("").ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("web: parse templates: %w", err)
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("web: static assets: %w", err)
	}
	h := &Handler{log: cfg.Logger, version: cfg.Version, tmpl: tmpl,
		static: http.StripPrefix("/static/", http.FileServerFS(sub)), mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /{$}", h.index)
	h.mux.Handle("GET /static/", h.static)
	return h, nil
}

// Paths lists the mux patterns the handler owns, for mounting beside
// other handlers (postgram-server mounts /api, /mcp and /health apart).
func Paths() []string { return []string{"GET /{$}", "GET /static/"} }

// ServeHTTP sets the security headers and dispatches.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	h.mux.ServeHTTP(w, r)
}

type page struct {
	Title   string
	Version string
	HTMX    string
}

func (h *Handler) index(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, "index.html", page{Title: "Postgram", Version: h.version, HTMX: HTMXVersion})
}

func (h *Handler) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := h.tmpl.ExecuteTemplate(w, name, data); err != nil {
		h.log.ErrorContext(r.Context(), "web: render", "template", name, "err", err)
	}
}
