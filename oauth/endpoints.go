package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// Paths lists the mux patterns Handler serves (the consent page,
// /oauth/authorize, is the web app's).
func Paths() []string {
	return []string{"GET /.well-known/oauth-protected-resource", "GET /.well-known/oauth-protected-resource/mcp",
		"GET /.well-known/oauth-authorization-server", "POST /oauth/register", "POST /oauth/token", "POST /oauth/revoke"}
}

// Handler serves the discovery, registration, token and revocation
// endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", s.resourceMetadata)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", s.resourceMetadata)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.serverMetadata)
	mux.HandleFunc("POST /oauth/register", s.register)
	mux.HandleFunc("POST /oauth/token", s.token)
	mux.HandleFunc("POST /oauth/revoke", s.revoke)
	return mux
}

// scopeNames are the scopes a client may ask for.
var scopeNames = []string{string(postgram.ScopeRead), string(postgram.ScopeWrite), string(postgram.ScopeDelete),
	string(postgram.ScopeSync), string(postgram.ScopeBackup)}

func (s *Server) resourceMetadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"resource":                 s.Resource(),
		"authorization_servers":    []string{s.issuer},
		"bearer_methods_supported": []string{"header"},
		"scopes_supported":         scopeNames,
		"resource_name":            "Postgram",
	})
}

func (s *Server) serverMetadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         s.issuer,
		"authorization_endpoint":                         s.issuer + "/oauth/authorize",
		"token_endpoint":                                 s.issuer + "/oauth/token",
		"registration_endpoint":                          s.issuer + "/oauth/register",
		"revocation_endpoint":                            s.issuer + "/oauth/revoke",
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"revocation_endpoint_auth_methods_supported":     []string{"none"},
		"scopes_supported":                               scopeNames,
		"authorization_response_iss_parameter_supported": true,
	})
}

// Error is an OAuth error response: {error, error_description}.
type Error struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
	status      int
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

func oauthErr(status int, code, format string, args ...any) *Error {
	return &Error{Code: code, Description: fmt.Sprintf(format, args...), status: status}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fail writes an OAuth error; anything else is a 500 with the details
// logged, not sent.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var oe *Error
	if errors.As(err, &oe) {
		if oe.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="postgram"`)
		}
		writeJSON(w, oe.status, oe)
		return
	}
	s.log.ErrorContext(r.Context(), "oauth: request failed", "path", r.URL.Path, "err", err)
	writeJSON(w, http.StatusInternalServerError, &Error{Code: "server_error", Description: "the server could not answer; try again"})
}

// maxBody bounds registration, token and revocation requests.
const maxBody = 16 << 10

// registration is an RFC 7591 request.
type registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	Scope                   string   `json:"scope"`
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req registration
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		s.fail(w, r, oauthErr(400, "invalid_client_metadata", "the body is unreadable or larger than %d bytes", maxBody))
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		s.fail(w, r, oauthErr(400, "invalid_client_metadata", "the body must be a JSON object: %v", err))
		return
	}
	c, err := s.Register(r.Context(), req.ClientName, req.RedirectURIs, req.GrantTypes, req.ResponseTypes)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id": c.ID, "client_id_issued_at": c.CreatedAt.Unix(), "client_name": c.Name, "redirect_uris": c.RedirectURIs,
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"token_endpoint_auth_method": "none",
	})
}

// Register registers a public client. Its redirect URIs must be absolute
// https URLs, or http on a loopback host (a native app), without a
// fragment; they are matched exactly at authorization.
func (s *Server) Register(ctx context.Context, name string, redirects, grantTypes, responseTypes []string) (*Client, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name = "unnamed client"
	}
	if len([]rune(name)) > 80 {
		name = string([]rune(name)[:80])
	}
	if len(redirects) == 0 || len(redirects) > 10 {
		return nil, oauthErr(400, "invalid_redirect_uri", "redirect_uris must list 1 to 10 URIs")
	}
	for i, u := range redirects {
		if err := checkRedirect(u); err != nil {
			return nil, oauthErr(400, "invalid_redirect_uri", "redirect_uris[%d]: %v", i, err)
		}
	}
	for _, g := range grantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return nil, oauthErr(400, "invalid_client_metadata", "grant_types: %q is not supported (authorization_code, refresh_token)", clip(g))
		}
	}
	for _, t := range responseTypes {
		if t != "code" {
			return nil, oauthErr(400, "invalid_client_metadata", "response_types: %q is not supported (code)", clip(t))
		}
	}
	c := &Client{ID: uuid.NewString(), Name: name, RedirectURIs: redirects, CreatedAt: s.now().UTC().Truncate(time.Second)}
	// A client that never obtains a token is forgotten after a week (the
	// hourly sweep), so anonymous registrations cannot pile up.
	exp := s.now().Add(UnusedClientTTL)
	if _, err := s.put(ctx, kindClient, c.ID, c, &exp); err != nil {
		return nil, fmt.Errorf("oauth: register client: %w", err)
	}
	return c, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func checkRedirect(raw string) error {
	if len(raw) > 2000 {
		return errors.New("longer than 2000 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", clip(raw))
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return errors.New("must not have a fragment")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopback(u.Hostname()) {
			return nil
		}
		return errors.New("http is allowed only on a loopback host (127.0.0.1, [::1], localhost); use https")
	}
	return fmt.Errorf("scheme %q is not allowed (https, or http on loopback)", clip(u.Scheme))
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func checkIssuer(iss string) error {
	u, err := url.Parse(iss)
	if iss == "" || err != nil || !u.IsAbs() || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("oauth: PUBLIC_BASE_URL must be the server's public origin, like https://notes.example.com (got %q)", iss)
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname())) {
		return fmt.Errorf("oauth: PUBLIC_BASE_URL must use https (http only on a loopback host), got %q", iss)
	}
	return nil
}

// token serves /oauth/token.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, oauthErr(400, "invalid_request", "the body must be application/x-www-form-urlencoded"))
		return
	}
	f := r.PostForm
	var tok *Tokens
	var err error
	switch g := f.Get("grant_type"); g {
	case "authorization_code":
		tok, err = s.Exchange(r.Context(), f.Get("client_id"), f.Get("code"), f.Get("redirect_uri"), f.Get("code_verifier"), f.Get("resource"))
	case "refresh_token":
		tok, err = s.Refresh(r.Context(), f.Get("client_id"), f.Get("refresh_token"), f.Get("scope"))
	case "":
		err = oauthErr(400, "invalid_request", "grant_type is required")
	default:
		err = oauthErr(400, "unsupported_grant_type", "grant_type %q is not supported (authorization_code, refresh_token)", clip(g))
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, tok)
}

// Tokens is a token response.
type Tokens struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// verifierOK checks a PKCE S256 verifier against the stored challenge.
func verifierOK(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	for _, c := range verifier {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~", c)) {
			return false
		}
	}
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}

var errBadGrant = oauthErr(400, "invalid_grant", "the authorization code is unknown, expired or already used")

// Exchange trades an authorization code for tokens. A code presented a
// second time is refused and revokes the grant issued from it.
func (s *Server) Exchange(ctx context.Context, clientID, codeTok, redirect, verifier, resource string) (*Tokens, error) {
	if codeTok == "" || clientID == "" || verifier == "" {
		missing := "code"
		switch {
		case clientID == "":
			missing = "client_id"
		case verifier == "":
			missing = "code_verifier (PKCE is required)"
		}
		return nil, oauthErr(400, "invalid_request", "%s is required", missing)
	}
	if resource != "" && strings.TrimRight(resource, "/") != s.Resource() {
		return nil, oauthErr(400, "invalid_target", "resource must be %s", s.Resource())
	}
	var c code
	rec, err := s.get(ctx, kindCode, digest(codeTok), &c)
	if errors.Is(err, driver.ErrNotFound) {
		return nil, errBadGrant
	}
	if err != nil {
		return nil, err
	}
	if c.Used {
		s.replayed(ctx, "code", c.GrantID)
		return nil, errBadGrant
	}
	if c.ClientID != clientID {
		return nil, oauthErr(400, "invalid_grant", "the code was issued to another client")
	}
	if redirect == "" || redirect != c.RedirectURI {
		return nil, oauthErr(400, "invalid_grant", "redirect_uri must be the one of the authorization request")
	}
	if !verifierOK(verifier, c.Challenge) {
		return nil, oauthErr(400, "invalid_grant", "code_verifier does not match the code_challenge")
	}
	cl, err := s.client(ctx, clientID)
	if err != nil {
		return nil, oauthErr(401, "invalid_client", "the client is unknown or revoked")
	}
	c.Used = true
	if err := s.update(ctx, rec, &c); errors.Is(err, driver.ErrConflict) {
		return nil, errBadGrant // used at the same moment by another request
	} else if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	g := &Grant{ID: uuid.NewString(), ClientID: cl.ID, ClientName: cl.Name, UserID: c.UserID, UserName: c.UserName,
		Rights: c.Rights, CreatedAt: now, RefreshedAt: now}
	access, key, err := s.newAccessKey(ctx, g)
	if err != nil {
		return nil, err
	}
	g.KeyID = key
	if err := s.keepClient(ctx, cl.ID); err != nil {
		_ = s.revokeKey(ctx, key)
		return nil, err
	}
	grec, err := s.put(ctx, kindGrant, g.ID, g, nil)
	if err != nil {
		_ = s.revokeKey(ctx, key)
		return nil, err
	}
	g.version = grec.Version
	c.GrantID = g.ID
	if err := s.update(ctx, rec, &c); err != nil {
		s.log.WarnContext(ctx, "oauth: could not link the code to its grant (a replay would not revoke it)", "err", err)
	}
	return s.issue(ctx, g, access)
}

// UnusedClientTTL is how long a registered client that never obtained a
// token is kept.
const UnusedClientTTL = 7 * 24 * time.Hour

// keepClient makes a client permanent once it has obtained a token.
func (s *Server) keepClient(ctx context.Context, id string) error {
	for range 3 {
		r, err := s.store.OAuthRecord(ctx, kindClient, id)
		if err != nil {
			return err
		}
		if r.ExpiresAt == nil {
			return nil
		}
		r.ExpiresAt = nil
		if err := s.store.UpdateOAuthRecord(ctx, r); !errors.Is(err, driver.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("oauth: client %s kept changing: %w", id, driver.ErrConflict)
}

// newAccessKey creates the API key that is a grant's access token.
func (s *Server) newAccessKey(ctx context.Context, g *Grant) (string, string, error) {
	name := "oauth: " + g.ClientName + " for " + g.UserName
	if r := []rune(name); len(r) > 100 {
		name = string(r[:100])
	}
	tok, k, err := s.admin.CreateKey(ctx, postgram.KeySpec{Name: name, Scopes: g.Rights.Scopes,
		AllowedTypes: g.Rights.Types, AllowedVisibilities: g.Rights.Visibilities, ClientID: "oauth-" + g.ClientID,
		ExpiresAt: s.now().Add(s.access)})
	if err != nil {
		return "", "", fmt.Errorf("oauth: create access token: %w", err)
	}
	return tok, k.ID.String(), nil
}

// issue stores a new refresh token for g and answers with both tokens.
func (s *Server) issue(ctx context.Context, g *Grant, access string) (*Tokens, error) {
	rt := secret()
	exp := s.now().Add(s.renew)
	if _, err := s.put(ctx, kindRefresh, digest(rt), refresh{GrantID: g.ID}, &exp); err != nil {
		return nil, fmt.Errorf("oauth: store refresh token: %w", err)
	}
	scopes := make([]string, len(g.Rights.Scopes))
	for i, sc := range g.Rights.Scopes {
		scopes[i] = string(sc)
	}
	return &Tokens{AccessToken: access, TokenType: "Bearer", ExpiresIn: int64(s.access / time.Second), RefreshToken: rt,
		Scope: strings.Join(scopes, " ")}, nil
}

// replayed revokes the grant of a code or refresh token presented again.
func (s *Server) replayed(ctx context.Context, what, grantID string) {
	s.log.WarnContext(ctx, "oauth: a used "+what+" was presented again; revoking its grant", "grant", grantID)
	if grantID == "" {
		return
	}
	if err := s.RevokeGrant(ctx, grantID); err != nil {
		s.log.ErrorContext(ctx, "oauth: revoke a replayed grant", "grant", grantID, "err", err)
	}
}

// Refresh rotates a refresh token: the old one stops working, a new access
// token (API key) replaces the old one. A used refresh token revokes the
// whole grant. scope, when given, may not ask for more than the grant.
func (s *Server) Refresh(ctx context.Context, clientID, rt, scope string) (*Tokens, error) {
	if rt == "" || clientID == "" {
		return nil, oauthErr(400, "invalid_request", "refresh_token and client_id are required")
	}
	var ref refresh
	rec, err := s.get(ctx, kindRefresh, digest(rt), &ref)
	if errors.Is(err, driver.ErrNotFound) {
		return nil, oauthErr(400, "invalid_grant", "the refresh token is unknown or expired")
	}
	if err != nil {
		return nil, err
	}
	if ref.Used {
		s.replayed(ctx, "refresh token", ref.GrantID)
		return nil, oauthErr(400, "invalid_grant", "the refresh token was already used; the grant is revoked")
	}
	g, err := s.grant(ctx, ref.GrantID)
	if err != nil || g.Revoked {
		return nil, oauthErr(400, "invalid_grant", "the grant was revoked")
	}
	if g.ClientID != clientID {
		return nil, oauthErr(400, "invalid_grant", "the refresh token was issued to another client")
	}
	for _, sc := range strings.Fields(scope) {
		if !slices.Contains(g.Rights.Scopes, postgram.Scope(sc)) {
			return nil, oauthErr(400, "invalid_scope", "scope %q was not granted", clip(sc))
		}
	}
	if _, err := s.client(ctx, clientID); err != nil {
		return nil, oauthErr(401, "invalid_client", "the client is unknown or revoked")
	}
	ref.Used = true
	if err := s.update(ctx, rec, &ref); errors.Is(err, driver.ErrConflict) {
		s.replayed(ctx, "refresh token", ref.GrantID)
		return nil, oauthErr(400, "invalid_grant", "the refresh token was already used; the grant is revoked")
	} else if err != nil {
		return nil, err
	}
	access, key, err := s.newAccessKey(ctx, g)
	if err != nil {
		return nil, err
	}
	old := g.KeyID
	g.KeyID, g.RefreshedAt = key, s.now().UTC()
	grec := &driver.OAuthRecord{Kind: kindGrant, ID: g.ID, Version: g.version}
	if err := s.update(ctx, grec, g); err != nil {
		_ = s.revokeKey(ctx, key)
		if errors.Is(err, driver.ErrConflict) {
			return nil, oauthErr(400, "invalid_grant", "the grant was revoked")
		}
		return nil, err
	}
	if err := s.revokeKey(ctx, old); err != nil {
		s.log.WarnContext(ctx, "oauth: revoke the replaced access token", "err", err)
	}
	return s.issue(ctx, g, access)
}

// revoke serves /oauth/revoke (RFC 7009): a refresh token ends its grant,
// an OAuth access token too; the answer is 200 whatever the token was.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, oauthErr(400, "invalid_request", "the body must be application/x-www-form-urlencoded"))
		return
	}
	tok := r.PostForm.Get("token")
	if tok == "" {
		s.fail(w, r, oauthErr(400, "invalid_request", "token is required"))
		return
	}
	if err := s.Revoke(r.Context(), tok); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// Revoke ends the grant of a refresh or access token. Unknown tokens and
// API keys that OAuth did not issue are left alone without error.
func (s *Server) Revoke(ctx context.Context, tok string) error {
	var ref refresh
	if _, err := s.get(ctx, kindRefresh, digest(tok), &ref); err == nil {
		return s.RevokeGrant(ctx, ref.GrantID)
	} else if !errors.Is(err, driver.ErrNotFound) {
		return err
	}
	c, err := s.admin.Authenticate(ctx, tok)
	if err != nil || c.Principal() == nil {
		return nil
	}
	keyID := c.Principal().KeyID
	gs, err := s.Grants(ctx)
	if err != nil {
		return err
	}
	for _, g := range gs {
		if g.KeyID == keyID {
			return s.RevokeGrant(ctx, g.ID)
		}
	}
	return nil
}
