package web

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// The knowledge browser: search with filters and the ranking's
// explanation, an entity's page with its edit form (a stale version shows
// the conflict and the current text), create, archive and restore. Every
// call goes through the library as the signed-in user: an admin with the
// operator's rights, a member with the rights of its API key.

// signedIn resolves the request's user and the client acting for it. It
// redirects to /login (or /setup) and returns nil when there is none.
func (h *Handler) signedIn(w http.ResponseWriter, r *http.Request) (*current, *postgram.Client) {
	cur, err := h.auth.session(r)
	if err != nil {
		h.fail(w, r, err)
		return nil, nil
	}
	if cur == nil {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return nil, nil
	}
	c, err := h.clientFor(r.Context(), cur.user)
	if err != nil {
		http.Error(w, "your account cannot act: "+err.Error(), http.StatusForbidden)
		return nil, nil
	}
	return cur, c
}

// clientFor returns the library client a user acts through.
func (h *Handler) clientFor(ctx context.Context, u *driver.User) (*postgram.Client, error) {
	if u.Role == driver.UserAdmin {
		return h.auth.admin.Client(), nil
	}
	keys, err := h.auth.admin.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	for i := range keys {
		k := &keys[i]
		if k.ID.String() != u.KeyID {
			continue
		}
		if k.RevokedAt != nil || (k.ExpiresAt != nil && !h.auth.now().Before(*k.ExpiresAt)) {
			return nil, errors.New("the API key it is bound to was revoked or expired")
		}
		return h.auth.admin.As(postgram.KeyPrincipal(k)), nil
	}
	return nil, errors.New("the API key it is bound to does not exist")
}

// userError renders a library error as the message a person reads and
// the status that goes with it.
func userError(err error) (int, string) {
	var fe *postgram.FieldError
	switch {
	case errors.As(err, &fe):
		return http.StatusBadRequest, fe.Error()
	case errors.Is(err, postgram.ErrNotFound):
		return http.StatusNotFound, "not found (or not visible to you)"
	case errors.Is(err, postgram.ErrForbidden):
		return http.StatusForbidden, "your account may not do this: " + err.Error()
	case errors.Is(err, postgram.ErrConflict):
		return http.StatusConflict, "it changed since you opened it"
	case errors.Is(err, postgram.ErrInvalidArgument):
		return http.StatusBadRequest, err.Error()
	}
	return http.StatusServiceUnavailable, "the server could not do it right now; try again"
}

type resultView struct {
	ID      string
	Name    string
	Type    string
	Snippet string
	Score   string
	Explain string
}

type searchPage struct {
	page
	Q        string
	Type     string
	Tags     string
	Explain  bool
	Archived bool
	Results  []resultView
	Degraded []string
	Searched bool
	Types    []postgram.EntityType
}

func snippet(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (h *Handler) search(w http.ResponseWriter, r *http.Request) {
	cur, c := h.signedIn(w, r)
	if c == nil {
		return
	}
	q := r.URL.Query()
	p := searchPage{page: h.userPage("Search", cur), Q: q.Get("q"), Type: q.Get("type"), Tags: q.Get("tags"),
		Explain: q.Get("explain") != "", Archived: q.Get("archived") != "", Types: postgram.EntityTypes}
	status := http.StatusOK
	if strings.TrimSpace(p.Q) != "" {
		req := postgram.SearchRequest{Query: p.Q, Tags: splitList(p.Tags), Explain: p.Explain, IncludeArchived: p.Archived}
		if p.Type != "" {
			req.Types = []postgram.EntityType{postgram.EntityType(p.Type)}
		}
		res, err := c.Search(r.Context(), req)
		if err != nil {
			status, p.Error = userError(err)
		} else {
			p.Searched = true
			for _, d := range res.Degraded {
				p.Degraded = append(p.Degraded, d.Component+": "+d.Reason)
			}
			for _, x := range res.Results {
				v := resultView{ID: x.Entity.ID.String(), Name: postgram.DisplayName(x.Entity), Type: string(x.Entity.Type),
					Score: fmt.Sprintf("%.3f", x.Score)}
				if x.ChunkContent != "" {
					v.Snippet = snippet(x.ChunkContent, 300)
				} else {
					v.Snippet = snippet(x.Entity.Content, 300)
				}
				if x.Explain != nil {
					v.Explain = x.Explain.String()
				}
				p.Results = append(p.Results, v)
			}
		}
	}
	w.WriteHeader(status)
	h.render(w, r, "search.html", p)
}

type entityPage struct {
	page
	E            *postgram.Entity
	Name         string
	Tags         string
	Metadata     string
	Statuses     []postgram.Status
	Visibilities []postgram.Visibility
	Types        []postgram.EntityType
	// Rendered is the content as sanitized Markdown.
	Rendered template.HTML
	// Conflict: the stored entity changed; Mine is the text the user sent.
	Conflict bool
	Mine     string
	New      bool
}

func (h *Handler) userPage(title string, cur *current) page {
	p := h.page(title)
	p.User, p.Role, p.CSRF = cur.user.Name, string(cur.user.Role), cur.session.CSRF
	return p
}

func (h *Handler) entityView(cur *current, e *postgram.Entity) entityPage {
	p := entityPage{page: h.userPage(postgram.DisplayName(e), cur), E: e, Name: postgram.DisplayName(e), Rendered: h.md.render(e.Content),
		Tags: strings.Join(e.Tags, ", "), Statuses: postgram.Statuses, Visibilities: postgram.Visibilities, Types: postgram.EntityTypes}
	if len(e.Metadata) > 0 {
		keys := make([]string, 0, len(e.Metadata))
		for k := range e.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s: %v\n", k, e.Metadata[k])
		}
		p.Metadata = b.String()
	}
	return p
}

func (h *Handler) entity(w http.ResponseWriter, r *http.Request) {
	cur, c := h.signedIn(w, r)
	if c == nil {
		return
	}
	id, err := postgram.ParseID("id", r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e, err := c.Recall(r.Context(), id)
	if err != nil {
		status, msg := userError(err)
		http.Error(w, msg, status)
		return
	}
	h.render(w, r, "entity.html", h.entityView(cur, e))
}

// formSession checks a signed-in form: the session and its CSRF token.
func (h *Handler) formSession(w http.ResponseWriter, r *http.Request) (*current, *postgram.Client, bool) {
	if !parseForm(w, r) {
		return nil, nil, false
	}
	cur, c := h.signedIn(w, r)
	if c == nil {
		return nil, nil, false
	}
	if !checkSessionToken(r, cur) {
		http.Error(w, staleForm, http.StatusForbidden)
		return nil, nil, false
	}
	return cur, c, true
}

func (h *Handler) updateEntity(w http.ResponseWriter, r *http.Request) {
	cur, c, ok := h.formSession(w, r)
	if !ok {
		return
	}
	id, err := postgram.ParseID("id", r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var version int64
	if _, err := fmt.Sscan(r.PostFormValue("version"), &version); err != nil || version < 1 {
		http.Error(w, "invalid version: reload the page", http.StatusBadRequest)
		return
	}
	content := r.PostFormValue("content")
	content = strings.ReplaceAll(content, "\r\n", "\n")
	tags := splitList(r.PostFormValue("tags"))
	status := postgram.Status(r.PostFormValue("status"))
	vis := postgram.Visibility(r.PostFormValue("visibility"))
	in := postgram.UpdateInput{Version: version, Content: &content, Tags: &tags}
	if status != "" {
		in.Status = &status
	}
	if vis != "" {
		in.Visibility = &vis
	}
	e, err := c.Update(r.Context(), id, in)
	var ce *postgram.ConflictError
	switch {
	case errors.As(err, &ce) && ce.Current != nil:
		p := h.entityView(cur, ce.Current)
		p.Conflict, p.Mine = true, content
		p.Error = fmt.Sprintf("someone changed this entity since you opened it (your version %d, now %d): "+
			"the form shows the current text; your text is kept below to copy from", version, ce.Current.Version)
		w.WriteHeader(http.StatusConflict)
		h.render(w, r, "entity.html", p)
		return
	case err != nil:
		st, msg := userError(err)
		cur2, rerr := c.Recall(r.Context(), id)
		if rerr != nil {
			http.Error(w, msg, st)
			return
		}
		p := h.entityView(cur, cur2)
		p.Error = msg
		w.WriteHeader(st)
		h.render(w, r, "entity.html", p)
		return
	}
	http.Redirect(w, r, "/entities/"+e.ID.String(), http.StatusSeeOther)
}

func (h *Handler) archiveEntity(w http.ResponseWriter, r *http.Request) {
	_, c, ok := h.formSession(w, r)
	if !ok {
		return
	}
	id, err := postgram.ParseID("id", r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	action := r.PathValue("action")
	if action != "archive" && action != "restore" {
		http.NotFound(w, r)
		return
	}
	if action == "restore" {
		var version int64
		if _, err := fmt.Sscan(r.PostFormValue("version"), &version); err != nil {
			http.Error(w, "invalid version: reload the page", http.StatusBadRequest)
			return
		}
		active := postgram.StatusActive
		_, err = c.Update(r.Context(), id, postgram.UpdateInput{Version: version, Status: &active})
	} else {
		_, err = c.Delete(r.Context(), id)
	}
	if err != nil {
		st, msg := userError(err)
		http.Error(w, msg, st)
		return
	}
	http.Redirect(w, r, "/entities/"+id.String(), http.StatusSeeOther)
}

func (h *Handler) newEntityForm(w http.ResponseWriter, r *http.Request) {
	cur, c := h.signedIn(w, r)
	if c == nil {
		return
	}
	h.render(w, r, "entity.html", entityPage{page: h.userPage("New entity", cur), New: true,
		E:        &postgram.Entity{Type: postgram.TypeMemory, Visibility: postgram.VisibilityShared, Status: postgram.StatusActive},
		Statuses: postgram.Statuses, Visibilities: postgram.Visibilities, Types: postgram.EntityTypes})
}

func (h *Handler) createEntity(w http.ResponseWriter, r *http.Request) {
	cur, c, ok := h.formSession(w, r)
	if !ok {
		return
	}
	in := postgram.StoreInput{Type: postgram.EntityType(r.PostFormValue("type")),
		Content:    strings.ReplaceAll(r.PostFormValue("content"), "\r\n", "\n"),
		Visibility: postgram.Visibility(r.PostFormValue("visibility")), Tags: splitList(r.PostFormValue("tags"))}
	e, err := c.Store(r.Context(), in)
	if err != nil {
		st, msg := userError(err)
		p := entityPage{page: h.userPage("New entity", cur), New: true,
			E:        &postgram.Entity{Type: in.Type, Content: in.Content, Visibility: in.Visibility, Status: postgram.StatusActive},
			Tags:     strings.Join(in.Tags, ", "),
			Statuses: postgram.Statuses, Visibilities: postgram.Visibilities, Types: postgram.EntityTypes}
		p.Error = msg
		w.WriteHeader(st)
		h.render(w, r, "entity.html", p)
		return
	}
	http.Redirect(w, r, "/entities/"+e.ID.String(), http.StatusSeeOther)
}

// when formats a time for pages.
func when(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }
