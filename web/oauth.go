package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/oauth"
)

// allScopes are the rights a person can hold and grant.
var allScopes = []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite, postgram.ScopeDelete, postgram.ScopeSync, postgram.ScopeBackup}

// rightsOf is what a user may do, hence the most they may grant: an
// admin everything, a member what their bound key allows.
func (h *Handler) rightsOf(r *http.Request, u *driver.User) (postgram.Principal, error) {
	c, err := h.clientFor(r.Context(), u)
	if err != nil {
		return postgram.Principal{}, err
	}
	if p := c.Principal(); p != nil {
		return *p, nil
	}
	return postgram.Principal{Scopes: allScopes}, nil
}

type consentPage struct {
	page
	Client       string
	ClientID     string
	RedirectHost string
	Query        string
	Scopes       []choice
	Types        []choice
	Visibilities []choice
	Problem      string
}

// choice is one checkbox of the consent form.
type choice struct {
	Value   string
	Checked bool
}

// validNext is a local path to return to after sign-in (never another
// site: "//host" and "/\host" are refused).
func validNext(s string) bool {
	return strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") && !strings.HasPrefix(s, "/\\")
}

// oauthAuthorize shows the consent page of an OAuth authorization request
// (package oauth checks the request; a person not signed in signs in
// first and comes back).
func (h *Handler) oauthAuthorize(w http.ResponseWriter, r *http.Request) {
	if h.oauth == nil || h.auth == nil {
		http.NotFound(w, r)
		return
	}
	req, ok := h.authorizeRequest(w, r, r.URL.Query())
	if !ok {
		return
	}
	cur, err := h.auth.session(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if cur == nil {
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	mine, err := h.rightsOf(r, cur.user)
	if err != nil {
		http.Error(w, "your account cannot act: "+err.Error(), http.StatusForbidden)
		return
	}
	h.consent(w, r, cur, req, mine, http.StatusOK, "")
}

// authorizeRequest checks the request; a refusal is answered (sent back
// to the client when its redirect URI is trusted, else shown).
func (h *Handler) authorizeRequest(w http.ResponseWriter, r *http.Request, q url.Values) (*oauth.Request, bool) {
	req, err := h.oauth.ParseAuthorize(r.Context(), q)
	var re *oauth.RequestError
	switch {
	case errors.As(err, &re) && re.Redirect != "":
		http.Redirect(w, r, re.Redirect, http.StatusFound)
		return nil, false
	case errors.As(err, &re):
		http.Error(w, "This authorization request cannot be answered: "+re.Message, http.StatusBadRequest)
		return nil, false
	case err != nil:
		h.fail(w, r, err)
		return nil, false
	}
	return req, true
}

func (h *Handler) consent(w http.ResponseWriter, r *http.Request, cur *current, req *oauth.Request, mine postgram.Principal, status int, problem string) {
	p := consentPage{page: h.userPage("Allow "+req.Client.Name+"?", cur), Client: req.Client.Name, ClientID: req.Client.ID,
		Query: req.Query.Encode(), Problem: problem}
	u, _ := url.Parse(req.RedirectURI)
	p.RedirectHost = u.Host
	for _, sc := range allScopes {
		if mine.Has(sc) {
			p.Scopes = append(p.Scopes, choice{Value: string(sc), Checked: slices.Contains(req.Scopes, sc)})
		}
	}
	for _, t := range postgram.EntityTypes {
		if len(mine.AllowedTypes) == 0 || slices.Contains(mine.AllowedTypes, t) {
			p.Types = append(p.Types, choice{Value: string(t)})
		}
	}
	for _, v := range postgram.Visibilities {
		if len(mine.AllowedVisibilities) == 0 || slices.Contains(mine.AllowedVisibilities, v) {
			p.Visibilities = append(p.Visibilities, choice{Value: string(v)})
		}
	}
	// The consent form's answer redirects to the client: the page's
	// form-action must allow that origin, or the browser blocks it.
	origin := u.Scheme + "://" + u.Host
	w.Header().Set("Content-Security-Policy", strings.Replace(CSP, "form-action 'self'", "form-action 'self' "+origin, 1))
	w.WriteHeader(status)
	h.render(w, r, "consent.html", p)
}

// oauthConsent records the person's answer and sends them back to the
// client: with a code and the rights they picked, or with access_denied.
func (h *Handler) oauthConsent(w http.ResponseWriter, r *http.Request) {
	if h.oauth == nil || h.auth == nil {
		http.NotFound(w, r)
		return
	}
	cur, _, ok := h.formSession(w, r)
	if !ok {
		return
	}
	q, err := url.ParseQuery(r.PostFormValue("request"))
	if err != nil {
		http.Error(w, "the authorization request in the form is malformed", http.StatusBadRequest)
		return
	}
	req, ok := h.authorizeRequest(w, r, q)
	if !ok {
		return
	}
	if r.PostFormValue("decision") != "allow" {
		h.audit(r, cur, "oauth.deny", map[string]any{"client_id": req.Client.ID, "client": req.Client.Name})
		http.Redirect(w, r, h.oauth.Deny(req), http.StatusSeeOther)
		return
	}
	mine, err := h.rightsOf(r, cur.user)
	if err != nil {
		http.Error(w, "your account cannot act: "+err.Error(), http.StatusForbidden)
		return
	}
	rights := oauth.Rights{}
	for _, s := range r.PostForm["scope"] {
		rights.Scopes = append(rights.Scopes, postgram.Scope(s))
	}
	for _, t := range r.PostForm["type"] {
		rights.Types = append(rights.Types, postgram.EntityType(t))
	}
	for _, v := range r.PostForm["visibility"] {
		rights.Visibilities = append(rights.Visibilities, postgram.Visibility(v))
	}
	// No box ticked means all the person may see.
	if len(rights.Types) == 0 {
		rights.Types = mine.AllowedTypes
	}
	if len(rights.Visibilities) == 0 {
		rights.Visibilities = mine.AllowedVisibilities
	}
	to, err := h.oauth.Approve(r.Context(), req, cur.user.ID.String(), cur.user.Name, mine, rights)
	if err != nil {
		var fe *postgram.FieldError
		if errors.As(err, &fe) {
			h.consent(w, r, cur, req, mine, http.StatusBadRequest, fe.Message)
			return
		}
		h.fail(w, r, err)
		return
	}
	h.audit(r, cur, "oauth.consent", map[string]any{"client_id": req.Client.ID, "client": req.Client.Name,
		"scopes": rights.Scopes, "types": rights.Types, "visibilities": rights.Visibilities})
	http.Redirect(w, r, to, http.StatusSeeOther)
}

type oauthRow struct {
	ID, Name, Detail, Rights, Created, Used string
	Active                                  bool
}

type oauthPage struct {
	page
	Enabled bool
	Clients []oauthRow
	Grants  []oauthRow
}

// oauthConsole lists the registered clients and the grants, with revoke
// buttons.
func (h *Handler) oauthConsole(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, false)
	if cur == nil {
		return
	}
	p := oauthPage{page: h.userPage("OAuth clients", cur), Enabled: h.oauth != nil}
	if h.oauth != nil {
		clients, err := h.oauth.Clients(r.Context())
		if err != nil {
			h.fail(w, r, err)
			return
		}
		for _, c := range clients {
			p.Clients = append(p.Clients, oauthRow{ID: c.ID, Name: c.Name, Detail: strings.Join(c.RedirectURIs, " "),
				Created: when(c.CreatedAt), Active: !c.Revoked})
		}
		grants, err := h.oauth.Grants(r.Context())
		if err != nil {
			h.fail(w, r, err)
			return
		}
		for _, g := range grants {
			p.Grants = append(p.Grants, oauthRow{ID: g.ID, Name: g.ClientName, Detail: g.UserName, Rights: rightsText(g.Rights),
				Created: when(g.CreatedAt), Used: when(g.RefreshedAt), Active: !g.Revoked})
		}
	}
	h.render(w, r, "oauth.html", p)
}

func rightsText(r oauth.Rights) string {
	var parts []string
	for _, s := range r.Scopes {
		parts = append(parts, string(s))
	}
	out := strings.Join(parts, ", ")
	if len(r.Types) > 0 {
		out += "; types " + joinStrings(r.Types)
	}
	if len(r.Visibilities) > 0 {
		out += "; visibilities " + joinStrings(r.Visibilities)
	}
	return out
}

func joinStrings[T ~string](in []T) string {
	s := make([]string, len(in))
	for i, v := range in {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// oauthRevoke revokes a grant or a client (with its grants).
func (h *Handler) oauthRevoke(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, true)
	if cur == nil {
		return
	}
	if h.oauth == nil {
		http.NotFound(w, r)
		return
	}
	id, what := r.PathValue("id"), r.PathValue("what")
	var err error
	switch what {
	case "grants":
		err = h.oauth.RevokeGrant(r.Context(), id)
	case "clients":
		err = h.oauth.RevokeClient(r.Context(), id)
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		st, msg := userError(err)
		http.Error(w, msg, st)
		return
	}
	h.audit(r, cur, "oauth.revoke", map[string]any{"kind": strings.TrimSuffix(what, "s"), "id": id})
	http.Redirect(w, r, "/admin/oauth", http.StatusSeeOther)
}
