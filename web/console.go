package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// The admin console: health, the store's size and the work queues; API
// keys (created with their limits, shown once, revoked); the audit log
// with filters. Admins only; every call goes through the library's Admin.

type consolePage struct {
	page
	Retried  string
	Health   postgram.Health
	Stats    postgram.StoreStats
	Queue    postgram.QueueStatus
	Types    []string
	Failures []driver.QueueFailure
}

func (h *Handler) console(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, false)
	if cur == nil {
		return
	}
	h.consoleView(w, r, cur, http.StatusOK, consolePage{})
}

// retryQueue makes a queue's failed entities due again (after the cause
// was fixed).
func (h *Handler) retryQueue(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, true)
	if cur == nil {
		return
	}
	queue := r.PostFormValue("queue")
	n, err := h.auth.admin.RetryFailed(r.Context(), queue)
	if err != nil {
		st, msg := userError(err)
		h.consoleView(w, r, cur, st, consolePage{page: page{Error: msg}})
		return
	}
	h.consoleView(w, r, cur, http.StatusOK, consolePage{Retried: fmt.Sprintf("%d failed %s entities are due again.", n, queue)})
}

func (h *Handler) consoleView(w http.ResponseWriter, r *http.Request, cur *current, status int, p consolePage) {
	a := h.auth.admin
	p.page = h.userPage("Admin", cur).withError(p.Error)
	var err error
	p.Health, _ = a.Health(r.Context()) // a degraded health is shown, not an error
	if p.Stats, err = a.Stats(r.Context()); err != nil {
		h.fail(w, r, err)
		return
	}
	if p.Queue, err = a.Client().QueueStatus(r.Context(), 20); err != nil {
		h.fail(w, r, err)
		return
	}
	for t := range p.Stats.EntitiesByType {
		p.Types = append(p.Types, t)
	}
	slices.Sort(p.Types)
	p.Failures = p.Queue.Failures
	w.WriteHeader(status)
	h.render(w, r, "console.html", p)
}

type keyRow struct {
	ID, Name, Prefix, Scopes, Limits, Client, Created, LastUsed, Expires, Revoked string
	Active                                                                        bool
}

type keysPage struct {
	page
	Keys         []keyRow
	Token        string // a new key, shown once
	TokenName    string
	Scopes       []postgram.Scope
	Types        []postgram.EntityType
	Visibilities []postgram.Visibility
}

func (h *Handler) keysView(w http.ResponseWriter, r *http.Request, cur *current, status int, p keysPage) {
	p.page = h.userPage("API keys", cur).withError(p.Error)
	p.Scopes, p.Types, p.Visibilities = postgram.AllScopes, postgram.EntityTypes, postgram.Visibilities
	keys, err := h.auth.admin.ListKeys(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	now := h.auth.now()
	for _, k := range keys {
		row := keyRow{ID: k.ID.String(), Name: k.Name, Prefix: k.Prefix, Client: k.ClientID, Created: when(k.CreatedAt)}
		var sc, lim []string
		for _, s := range k.Scopes {
			sc = append(sc, string(s))
		}
		for _, t := range k.AllowedTypes {
			lim = append(lim, string(t))
		}
		for _, v := range k.AllowedVisibilities {
			lim = append(lim, string(v))
		}
		row.Scopes, row.Limits = strings.Join(sc, ", "), strings.Join(lim, ", ")
		if k.LastUsedAt != nil {
			row.LastUsed = when(*k.LastUsedAt)
		}
		if k.ExpiresAt != nil {
			row.Expires = when(*k.ExpiresAt)
		}
		if k.RevokedAt != nil {
			row.Revoked = when(*k.RevokedAt)
		}
		row.Active = k.RevokedAt == nil && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt))
		p.Keys = append(p.Keys, row)
	}
	w.WriteHeader(status)
	h.render(w, r, "keys.html", p)
}

func (p page) withError(msg string) page { p.Error = msg; return p }

func (h *Handler) keys(w http.ResponseWriter, r *http.Request) {
	if cur := h.adminOnly(w, r, false); cur != nil {
		h.keysView(w, r, cur, http.StatusOK, keysPage{})
	}
}

func (h *Handler) createKey(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, true)
	if cur == nil {
		return
	}
	spec := postgram.KeySpec{Name: strings.TrimSpace(r.PostFormValue("name")), ClientID: strings.TrimSpace(r.PostFormValue("client_id"))}
	for _, s := range r.PostForm["scope"] {
		spec.Scopes = append(spec.Scopes, postgram.Scope(s))
	}
	for _, t := range r.PostForm["type"] {
		spec.AllowedTypes = append(spec.AllowedTypes, postgram.EntityType(t))
	}
	for _, v := range r.PostForm["visibility"] {
		spec.AllowedVisibilities = append(spec.AllowedVisibilities, postgram.Visibility(v))
	}
	if d := strings.TrimSpace(r.PostFormValue("expires")); d != "" {
		t, err := time.Parse("2006-01-02", d)
		if err != nil {
			h.keysView(w, r, cur, http.StatusBadRequest, keysPage{page: page{Error: "expires: a date, YYYY-MM-DD"}})
			return
		}
		spec.ExpiresAt = t.UTC()
	}
	token, k, err := h.auth.admin.CreateKey(r.Context(), spec)
	if err != nil {
		st, msg := userError(err)
		h.keysView(w, r, cur, st, keysPage{page: page{Error: msg}})
		return
	}
	h.audit(r, cur, "web.key.create", map[string]any{"key_id": k.ID.String(), "name": k.Name})
	// The token is shown on this answer only; it is never stored.
	h.keysView(w, r, cur, http.StatusOK, keysPage{Token: token, TokenName: k.Name})
}

func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, true)
	if cur == nil {
		return
	}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		http.Error(w, "invalid key id", http.StatusBadRequest)
		return
	}
	if err := h.auth.admin.RevokeKey(r.Context(), id); err != nil {
		st, msg := userError(err)
		http.Error(w, msg, st)
		return
	}
	h.audit(r, cur, "web.key.revoke", map[string]any{"key_id": id.String()})
	http.Redirect(w, r, "/admin/keys", http.StatusSeeOther)
}

type auditRow struct {
	At, Key, Client, Operation, Entity, Details string
}

type auditPage struct {
	page
	Since, Operation, Key string
	Rows                  []auditRow
}

func (h *Handler) auditLog(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, false)
	if cur == nil {
		return
	}
	q := r.URL.Query()
	p := auditPage{page: h.userPage("Audit log", cur), Since: q.Get("since"), Operation: q.Get("operation"), Key: q.Get("key")}
	f := postgram.AuditFilter{Operation: strings.TrimSpace(p.Operation), KeyID: strings.TrimSpace(p.Key), Limit: 200}
	status := http.StatusOK
	if p.Since != "" {
		t, err := time.Parse("2006-01-02", p.Since)
		if err != nil {
			status, p.Error = http.StatusBadRequest, "since: a date, YYYY-MM-DD"
		}
		f.Since = t
	}
	if status == http.StatusOK {
		entries, err := h.auth.admin.Audit(r.Context(), f)
		if err != nil {
			status, p.Error = userError(err)
		}
		for _, e := range entries {
			row := auditRow{At: when(e.At), Key: e.KeyID, Client: e.ClientID, Operation: e.Operation, Entity: e.EntityID}
			if len(e.Details) > 0 {
				b, _ := json.Marshal(e.Details)
				row.Details = snippet(string(b), 300)
			}
			p.Rows = append(p.Rows, row)
		}
	}
	w.WriteHeader(status)
	h.render(w, r, "audit.html", p)
}

// bytesHuman renders a size for pages.
func bytesHuman(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
