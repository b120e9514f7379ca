package web

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/oauth"
)

// oauthClient is a registered public client with its PKCE pair.
type oauthClient struct {
	ID, Redirect, Verifier, Challenge string
}

func (s *site) register(redirect string) oauthClient {
	s.t.Helper()
	res, err := http.Post(s.srv.URL+"/oauth/register", "application/json",
		strings.NewReader(`{"client_name":"Test Assistant","redirect_uris":["`+redirect+`"],"token_endpoint_auth_method":"none"}`))
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != http.StatusCreated || out["client_id"] == "" || out["token_endpoint_auth_method"] != "none" {
		s.t.Fatalf("register: %d %v", res.StatusCode, out)
	}
	v := "verifier-" + strings.Repeat("x", 40) + redirect[len(redirect)-3:]
	v = strings.NewReplacer(":", "x", "/", "x").Replace(v)
	sum := sha256.Sum256([]byte(v))
	return oauthClient{ID: out["client_id"].(string), Redirect: redirect, Verifier: v,
		Challenge: base64.RawURLEncoding.EncodeToString(sum[:])}
}

func (c oauthClient) authorizeQuery(extra url.Values) string {
	q := url.Values{"response_type": {"code"}, "client_id": {c.ID}, "redirect_uri": {c.Redirect},
		"code_challenge": {c.Challenge}, "code_challenge_method": {"S256"}, "state": {"st-1"}, "scope": {"read write"}}
	for k, v := range extra {
		q[k] = v
	}
	return "/oauth/authorize?" + q.Encode()
}

// consent opens the consent page as browser b and answers it with form
// (decision, scope…), returning the redirect the person is sent to.
func (s *site) consent(b *http.Client, c oauthClient, form url.Values) *url.URL {
	s.t.Helper()
	path := c.authorizeQuery(nil)
	code, loc, body := s.get(b, path)
	if code != http.StatusOK || !strings.Contains(body, "Test Assistant") {
		s.t.Fatalf("consent page: %d %s\n%s", code, loc, body)
	}
	form.Set("csrf", csrfRE.FindStringSubmatch(body)[1])
	form.Set("request", strings.TrimPrefix(path, "/oauth/authorize?"))
	res, body := s.post(b, "/oauth/authorize", form)
	if res.StatusCode != http.StatusSeeOther {
		s.t.Fatalf("consent answer: %d\n%s", res.StatusCode, body)
	}
	u, err := url.Parse(res.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(u.String(), c.Redirect) {
		s.t.Fatalf("sent to %q", res.Header.Get("Location"))
	}
	return u
}

func (s *site) tokenRequest(form url.Values) (int, map[string]any) {
	s.t.Helper()
	res, err := http.PostForm(s.srv.URL+"/oauth/token", form)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	if res.Header.Get("Cache-Control") != "no-store" {
		s.t.Errorf("token response without Cache-Control: no-store")
	}
	return res.StatusCode, out
}

func (s *site) exchange(c oauthClient, code string) (int, map[string]any) {
	return s.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {c.ID},
		"redirect_uri": {c.Redirect}, "code_verifier": {c.Verifier}})
}

// TestOAuthFlow: discovery, registration, consent with chosen rights,
// PKCE code exchange, the access token acting as an API key with exactly
// those rights, refresh rotation with replay detection, and revocation.
func TestOAuthFlow(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ctx := context.Background()
	// Discovery.
	for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server"} {
		res, err := http.Get(s.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		res.Body.Close()
		if res.StatusCode != 200 || (m["resource"] != s.srv.URL+"/mcp" && m["issuer"] != s.srv.URL) {
			t.Fatalf("%s: %d %v", p, res.StatusCode, m)
		}
		if p == "/.well-known/oauth-authorization-server" && (m["code_challenge_methods_supported"].([]any)[0] != "S256" ||
			m["token_endpoint"] != s.srv.URL+"/oauth/token" || m["registration_endpoint"] != s.srv.URL+"/oauth/register") {
			t.Fatalf("metadata: %v", m)
		}
	}
	c := s.register("http://127.0.0.1:9/callback")

	// Not signed in: sign in first, then back to the consent page.
	b := s.browser()
	s.setup(b, "ada", "correct horse battery")
	anon := s.browser()
	code, loc, _ := s.get(anon, c.authorizeQuery(nil))
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/login?next=%2Foauth%2Fauthorize") {
		t.Fatalf("anonymous consent: %d %s", code, loc)
	}
	res, _ := s.post(anon, "/login", url.Values{"csrf": {s.csrf(anon, loc)}, "name": {"ada"}, "password": {"correct horse battery"},
		"next": {c.authorizeQuery(nil)}})
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/oauth/authorize?") {
		t.Fatalf("sign-in did not return to the consent page: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	if _, _, body := s.get(b, c.authorizeQuery(nil)); !strings.Contains(body, `value="write" checked`) || !strings.Contains(body, "127.0.0.1:9") {
		t.Fatalf("consent page does not pre-tick the asked scopes or name the destination:\n%s", body)
	}
	// The page's CSP lets its form redirect to the client.
	hres, _ := b.Get(s.srv.URL + c.authorizeQuery(nil))
	hres.Body.Close()
	if csp := hres.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' http://127.0.0.1:9") {
		t.Fatalf("consent CSP: %s", csp)
	}

	// Deny: back to the client with access_denied.
	u := s.consent(b, c, url.Values{"decision": {"deny"}})
	if u.Query().Get("error") != "access_denied" || u.Query().Get("state") != "st-1" {
		t.Fatalf("deny: %s", u)
	}
	// Allow read only, memories only.
	u = s.consent(b, c, url.Values{"decision": {"allow"}, "scope": {"read"}, "type": {"memory"}})
	if u.Query().Get("state") != "st-1" || u.Query().Get("iss") != s.srv.URL || u.Query().Get("code") == "" {
		t.Fatalf("allow: %s", u)
	}
	authCode := u.Query().Get("code")

	// A missing verifier and a wrong redirect URI are refused (the code
	// survives them), then the code is exchanged once.
	if st, out := s.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {authCode}, "client_id": {c.ID},
		"redirect_uri": {c.Redirect}}); st != 400 || out["error"] != "invalid_request" {
		t.Fatalf("no verifier: %d %v", st, out)
	}
	if st, out := s.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {authCode}, "client_id": {c.ID},
		"redirect_uri": {"http://127.0.0.1:9/other"}, "code_verifier": {c.Verifier}}); st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("wrong redirect: %d %v", st, out)
	}
	if st, out := s.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {authCode}, "client_id": {c.ID},
		"redirect_uri": {c.Redirect}, "code_verifier": {strings.Repeat("y", 50)}}); st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("wrong verifier: %d %v", st, out)
	}
	st, tok := s.exchange(c, authCode)
	if st != 200 || tok["token_type"] != "Bearer" || tok["scope"] != "read" || tok["expires_in"].(float64) != 3600 {
		t.Fatalf("exchange: %d %v", st, tok)
	}
	access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)

	// The access token is an API key with the chosen rights.
	cl, err := s.admin.Authenticate(ctx, access)
	if err != nil {
		t.Fatal(err)
	}
	p := cl.Principal()
	if len(p.Scopes) != 1 || p.Scopes[0] != postgram.ScopeRead || len(p.AllowedTypes) != 1 || p.AllowedTypes[0] != postgram.TypeMemory ||
		!strings.HasPrefix(p.ClientID, "oauth-") {
		t.Fatalf("principal: %+v", p)
	}
	if _, err := cl.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "x"}); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("a read-only token wrote: %v", err)
	}

	// A reused code is refused and revokes what it issued.
	if st, out := s.exchange(c, authCode); st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("reused code: %d %v", st, out)
	}
	if _, err := s.admin.Authenticate(ctx, access); !errors.Is(err, postgram.ErrUnauthorized) {
		t.Fatalf("the token of a replayed code still works: %v", err)
	}
	if st, out := s.tokenRequest(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {c.ID}}); st != 400 {
		t.Fatalf("refresh after replay: %d %v", st, out)
	}

	// A fresh grant: refresh rotates, the old access token stops, and a
	// replayed refresh token revokes the grant.
	u = s.consent(b, c, url.Values{"decision": {"allow"}, "scope": {"read", "write"}})
	_, tok = s.exchange(c, u.Query().Get("code"))
	access, refresh = tok["access_token"].(string), tok["refresh_token"].(string)
	st, tok2 := s.tokenRequest(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {c.ID}})
	if st != 200 || tok2["refresh_token"] == refresh || tok2["access_token"] == access {
		t.Fatalf("refresh: %d %v", st, tok2)
	}
	if _, err := s.admin.Authenticate(ctx, access); err == nil {
		t.Fatal("the replaced access token still works")
	}
	access2 := tok2["access_token"].(string)
	if _, err := s.admin.Authenticate(ctx, access2); err != nil {
		t.Fatalf("new access token: %v", err)
	}
	if st, out := s.tokenRequest(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {c.ID}}); st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("replayed refresh: %d %v", st, out)
	}
	if _, err := s.admin.Authenticate(ctx, access2); err == nil {
		t.Fatal("a replayed refresh token left the grant alive")
	}

	// Revocation (RFC 7009) of a refresh token ends its grant.
	u = s.consent(b, c, url.Values{"decision": {"allow"}, "scope": {"read"}})
	_, tok = s.exchange(c, u.Query().Get("code"))
	rres, err := http.PostForm(s.srv.URL+"/oauth/revoke", url.Values{"token": {tok["refresh_token"].(string)}})
	if err != nil || rres.StatusCode != 200 {
		t.Fatalf("revoke: %v %v", err, rres)
	}
	rres.Body.Close()
	if _, err := s.admin.Authenticate(ctx, tok["access_token"].(string)); err == nil {
		t.Fatal("revoked grant's access token still works")
	}

	// The console lists the client and its grants.
	if code, _, body := s.get(b, "/admin/oauth"); code != 200 || !strings.Contains(body, "Test Assistant") || !strings.Contains(body, "revoked") {
		t.Fatalf("console: %d\n%s", code, body)
	}
}

// TestOAuthRefusals: requests the server must refuse, and how.
func TestOAuthRefusals(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b := s.browser()
	s.setup(b, "ada", "correct horse battery")
	// Registration: only https or loopback http, no fragments.
	for _, body := range []string{`{"redirect_uris":["http://example.com/cb"]}`, `{"redirect_uris":[]}`,
		`{"redirect_uris":["https://ok.example/cb#frag"]}`, `{"redirect_uris":["javascript:alert(1)"]}`, `not json`,
		`{"redirect_uris":["https://ok.example/cb"],"grant_types":["client_credentials"]}`} {
		res, err := http.Post(s.srv.URL+"/oauth/register", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		if res.StatusCode != 400 || out["error"] == nil {
			t.Errorf("register %s: %d %v", body, res.StatusCode, out)
		}
	}
	c := s.register("https://assistant.example/oauth/callback")
	// An unregistered redirect URI is never redirected to.
	code, loc, body := s.get(b, c.authorizeQuery(url.Values{"redirect_uri": {"https://evil.example/cb"}}))
	if code != 400 || loc != "" || !strings.Contains(body, "redirect_uri") {
		t.Fatalf("foreign redirect: %d %q %s", code, loc, body)
	}
	code, loc, _ = s.get(b, "/oauth/authorize?client_id=nope&response_type=code")
	if code != 400 || loc != "" {
		t.Fatalf("unknown client: %d %q", code, loc)
	}
	// plain PKCE, a missing challenge and a foreign resource go back to the
	// client as errors.
	for _, extra := range []url.Values{{"code_challenge_method": {"plain"}}, {"code_challenge": {""}},
		{"resource": {"https://other.example/mcp"}}, {"scope": {"admin"}}, {"response_type": {"token"}}} {
		code, loc, _ := s.get(b, c.authorizeQuery(extra))
		u, _ := url.Parse(loc)
		if code != http.StatusFound || !strings.HasPrefix(loc, c.Redirect) || u.Query().Get("error") == "" || u.Query().Get("state") != "st-1" {
			t.Errorf("%v: %d %s", extra, code, loc)
		}
	}
	// A member bound to a read-only key cannot grant write.
	keys, err := s.admin.ListKeys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var reader string
	for _, k := range keys {
		if k.Name == "reader" {
			reader = k.ID.String()
		}
	}
	_, _, home := s.get(b, "/")
	if res, body := s.post(b, "/users", url.Values{"csrf": {csrfRE.FindStringSubmatch(home)[1]}, "name": {"bo"},
		"password": {"another long password"}, "confirm": {"another long password"}, "role": {"member"}, "key": {reader}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("add member: %d\n%s", res.StatusCode, body)
	}
	mb := s.browser()
	if res, _ := s.login(mb, "bo", "another long password"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("member sign-in: %d", res.StatusCode)
	}
	if _, _, body := s.get(mb, c.authorizeQuery(nil)); strings.Contains(body, `value="write"`) {
		t.Fatalf("a read-only member is offered write:\n%s", body)
	}
	path := c.authorizeQuery(nil)
	_, _, page := s.get(mb, path)
	res, out := s.post(mb, "/oauth/authorize", url.Values{"csrf": {csrfRE.FindStringSubmatch(page)[1]},
		"request": {strings.TrimPrefix(path, "/oauth/authorize?")}, "decision": {"allow"}, "scope": {"write"}})
	if res.StatusCode != 400 || !strings.Contains(out, "rights you do not have") {
		t.Fatalf("member granting write: %d\n%s", res.StatusCode, out)
	}
	// Token endpoint: unknown grant types and codes.
	if st, out := s.tokenRequest(url.Values{"grant_type": {"password"}}); st != 400 || out["error"] != "unsupported_grant_type" {
		t.Fatalf("password grant: %d %v", st, out)
	}
	if st, out := s.exchange(c, "made-up"); st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("made-up code: %d %v", st, out)
	}
	// Revoking an unknown token is fine (RFC 7009).
	res2, err := http.PostForm(s.srv.URL+"/oauth/revoke", url.Values{"token": {"whatever"}})
	if err != nil || res2.StatusCode != 200 {
		t.Fatalf("revoke unknown: %v %v", err, res2)
	}
	res2.Body.Close()
}

// TestOAuthUnusedClientsExpire: a registration that never obtains a token
// is swept after UnusedClientTTL; one that did is kept.
func TestOAuthUnusedClientsExpire(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b := s.browser()
	s.setup(b, "ada", "correct horse battery")
	used, idle := s.register("http://127.0.0.1:9/used"), s.register("http://127.0.0.1:9/idle")
	u := s.consent(b, used, url.Values{"decision": {"allow"}, "scope": {"read"}})
	if st, out := s.exchange(used, u.Query().Get("code")); st != 200 {
		t.Fatalf("exchange: %d %v", st, out)
	}
	n, err := s.store.DeleteExpiredOAuthRecords(t.Context(), time.Now().Add(oauth.UnusedClientTTL+time.Minute))
	if err != nil || n < 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if code, _, _ := s.get(b, idle.authorizeQuery(nil)); code != http.StatusBadRequest {
		t.Fatalf("an idle client outlived its registration: %d", code)
	}
	if code, _, _ := s.get(b, used.authorizeQuery(nil)); code != http.StatusOK {
		t.Fatalf("a client in use was swept: %d", code)
	}
}

// FuzzOAuthEndpoints: whatever arrives at the authorization request, the
// registration, the token and the revocation endpoints is answered with a
// 2xx, 3xx or 4xx, never a 5xx or a panic.
func FuzzOAuthEndpoints(f *testing.F) {
	f.Add("response_type=code&client_id=x&code_challenge_method=S256", `{"redirect_uris":["https://a.example/cb"]}`,
		"grant_type=authorization_code&code=x&client_id=y&code_verifier=z")
	f.Add("client_id=%ff&redirect_uri=javascript:x", `{"redirect_uris":[1,2]}`, "grant_type=refresh_token&refresh_token=&client_id=")
	f.Add("", `[]`, "token=abc")
	f.Add("scope=read%20write&resource=https://x", `{"client_name":"`+strings.Repeat("é", 200)+`","redirect_uris":["http://[::1]/cb"]}`, "%zz")
	s := newSite(f)
	f.Fuzz(func(t *testing.T, query, register, form string) {
		for _, req := range []struct{ method, path, ctype, body string }{
			{"GET", "/oauth/authorize?" + query, "", ""},
			{"POST", "/oauth/register", "application/json", register},
			{"POST", "/oauth/token", "application/x-www-form-urlencoded", form},
			{"POST", "/oauth/revoke", "application/x-www-form-urlencoded", form},
		} {
			r, err := http.NewRequest(req.method, s.srv.URL+req.path, strings.NewReader(req.body))
			if err != nil {
				continue // not a valid URL: nothing reaches the server
			}
			if req.ctype != "" {
				r.Header.Set("Content-Type", req.ctype)
			}
			res, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode >= 500 {
				t.Fatalf("%s %s %q: %d", req.method, req.path, req.body, res.StatusCode)
			}
		}
	})
}
