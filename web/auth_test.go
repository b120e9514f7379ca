package web

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/oauth"
	"github.com/postgram-go/postgram/providers/hashing"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/web/password"
)

// site is a web handler on a real SQLite store, served over HTTP, with a
// browser-like client (cookie jar, no automatic redirects followed for
// POSTs' answers to be seen).
type site struct {
	t         testing.TB
	srv       *httptest.Server
	admin     *postgram.Admin
	adminKey  string
	memberKey string
	clock     *clock
	store     *sqlite.Store
	oauth     *oauth.Server
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newSite(t testing.TB) *site {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "postgram.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: hashing.New(64)})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := c.Admin()
	if err != nil {
		t.Fatal(err)
	}
	adminKey, _, err := admin.CreateKey(ctx, postgram.KeySpec{Name: "bootstrap-admin", Scopes: postgram.AllScopes})
	if err != nil {
		t.Fatal(err)
	}
	memberKey, _, err := admin.CreateKey(ctx, postgram.KeySpec{Name: "reader", Scopes: []postgram.Scope{postgram.ScopeRead}})
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)}
	// The server starts first: its address is the OAuth issuer.
	var handler atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.Load().(http.Handler).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	as, err := oauth.New(oauth.Config{Store: st, Admin: admin, Issuer: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Version: "test", Users: st, Admin: admin, Now: clk.now, OAuth: as,
		Password: password.Params{MemoryKiB: 1024, Time: 1, Threads: 1}, MaxFailuresPerIP: 1000})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, p := range Paths() {
		mux.Handle(p, h)
	}
	for _, p := range oauth.Paths() {
		mux.Handle(p, as.Handler())
	}
	handler.Store(http.Handler(mux))
	return &site{t: t, srv: srv, admin: admin, adminKey: adminKey, memberKey: memberKey, clock: clk, store: st, oauth: as}
}

func (s *site) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// get fetches path and returns the status, the Location and the body.
func (s *site) get(b *http.Client, path string) (int, string, string) {
	s.t.Helper()
	res, err := b.Get(s.srv.URL + path)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(body)
}

// csrf reads the form token of the page at path.
func (s *site) csrf(b *http.Client, path string) string {
	s.t.Helper()
	code, _, body := s.get(b, path)
	m := csrfRE.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		s.t.Fatalf("GET %s: %d, no csrf field:\n%s", path, code, body)
	}
	return m[1]
}

func (s *site) post(b *http.Client, path string, form url.Values) (*http.Response, string) {
	s.t.Helper()
	res, err := b.PostForm(s.srv.URL+path, form)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

func (s *site) setup(b *http.Client, name, pw string) {
	s.t.Helper()
	res, body := s.post(b, "/setup", url.Values{"csrf": {s.csrf(b, "/setup")}, "admin_key": {s.adminKey},
		"name": {name}, "password": {pw}, "confirm": {pw}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		s.t.Fatalf("setup: %d %s\n%s", res.StatusCode, res.Header.Get("Location"), body)
	}
}

func (s *site) login(b *http.Client, name, pw string) (*http.Response, string) {
	s.t.Helper()
	return s.post(b, "/login", url.Values{"csrf": {s.csrf(b, "/login")}, "name": {name}, "password": {pw}})
}

func TestOnboardingSignInAndOut(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b := s.browser()
	if code, loc, _ := s.get(b, "/"); code != http.StatusSeeOther || loc != "/setup" {
		t.Fatalf("first visit: %d → %q, want /setup", code, loc)
	}
	// Onboarding refuses a key that is not an admin key, a short password
	// and mismatched passwords, naming the field.
	for _, tc := range []struct {
		key, pw, confirm, want string
	}{
		{s.memberKey, "a long password!", "a long password!", "admin_key: not an admin API key"},
		{"pgm-nonsense", "a long password!", "a long password!", "admin_key: not an admin API key"},
		{s.adminKey, "short", "short", "password: at least 12 characters"},
		{s.adminKey, "a long password!", "another password", "confirm: the two passwords differ"},
	} {
		res, body := s.post(b, "/setup", url.Values{"csrf": {s.csrf(b, "/setup")}, "admin_key": {tc.key},
			"name": {"ada"}, "password": {tc.pw}, "confirm": {tc.confirm}})
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("setup with %q: %d, want 400 %q:\n%s", tc.want, res.StatusCode, tc.want, body)
		}
	}
	s.setup(b, "ada", "correct horse battery")
	code, _, body := s.get(b, "/")
	if code != http.StatusOK || !strings.Contains(body, "Signed in as <strong>ada</strong> (admin)") {
		t.Fatalf("after setup: %d\n%s", code, body)
	}
	// Setup is closed once a user exists.
	if code, loc, _ := s.get(s.browser(), "/setup"); code != http.StatusSeeOther || loc != "/login" {
		t.Fatalf("setup after onboarding: %d → %q", code, loc)
	}
	other := s.browser()
	res, body := s.post(other, "/setup", url.Values{"csrf": {s.csrf(other, "/login")}, "admin_key": {s.adminKey},
		"name": {"mallory"}, "password": {"a long password!"}, "confirm": {"a long password!"}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "setup is done") {
		t.Fatalf("second setup: %d\n%s", res.StatusCode, body)
	}

	// The session cookie is HttpOnly and SameSite=Strict; only a hash of
	// its token is stored.
	b2 := s.browser()
	res, _ = s.login(b2, "ada", "correct horse battery")
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", res.StatusCode)
	}
	var sess *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == sessionCookie {
			sess = c
		}
	}
	if sess == nil || !sess.HttpOnly || sess.SameSite != http.SameSiteStrictMode || sess.Path != "/" || sess.MaxAge != 12*3600 {
		t.Fatalf("session cookie = %+v", sess)
	}

	// Sign-out needs the session's CSRF token.
	res, _ = s.post(b2, "/logout", url.Values{"csrf": {"forged"}})
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("logout without the session's token: %d", res.StatusCode)
	}
	_, _, body = s.get(b2, "/")
	tok := csrfRE.FindStringSubmatch(body)[1]
	res, _ = s.post(b2, "/logout", url.Values{"csrf": {tok}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/login" {
		t.Fatalf("logout: %d", res.StatusCode)
	}
	if code, loc, _ := s.get(b2, "/"); code != http.StatusSeeOther || loc != "/login" {
		t.Fatalf("after logout: %d → %q", code, loc)
	}
	// The first browser is still signed in; "everywhere" ends both.
	_, _, body = s.get(b, "/")
	tok = csrfRE.FindStringSubmatch(body)[1]
	s.login(b2, "ada", "correct horse battery")
	res, _ = s.post(b, "/logout", url.Values{"csrf": {tok}, "everywhere": {"1"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout everywhere: %d", res.StatusCode)
	}
	for i, br := range []*http.Client{b, b2} {
		if code, _, _ := s.get(br, "/"); code != http.StatusSeeOther {
			t.Errorf("browser %d still signed in after sign-out everywhere", i)
		}
	}
}

func TestFormsNeedTheirCSRFToken(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b := s.browser()
	s.csrf(b, "/setup") // sets the form cookie
	for _, path := range []string{"/setup", "/login"} {
		res, _ := s.post(b, path, url.Values{"csrf": {"not-the-cookie"}, "admin_key": {s.adminKey}, "name": {"ada"},
			"password": {"a long password!"}, "confirm": {"a long password!"}})
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s with a wrong token: %d, want 403", path, res.StatusCode)
		}
	}
	// Without the cookie (a cross-site post never carries it) too.
	res, _ := s.post(s.browser(), "/login", url.Values{"csrf": {"x"}, "name": {"ada"}, "password": {"p"}})
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("POST /login without the form cookie: %d, want 403", res.StatusCode)
	}
}

func TestLockoutAfterFailedSignIns(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.setup(s.browser(), "ada", "correct horse battery")
	b := s.browser()
	for i := range 5 {
		res, body := s.login(b, "ada", "wrong password "+string(rune('a'+i)))
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "wrong name or password") {
			t.Fatalf("failure %d: %d\n%s", i, res.StatusCode, body)
		}
	}
	// Locked: even the right password is refused, with when it opens.
	res, body := s.login(b, "ada", "correct horse battery")
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "locked until 10:15 UTC") {
		t.Fatalf("locked account: %d\n%s", res.StatusCode, body)
	}
	// An unknown name answers like a wrong password.
	if res, body := s.login(b, "nobody", "whatever it is"); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "wrong name or password") {
		t.Fatalf("unknown name: %d\n%s", res.StatusCode, body)
	}
	s.clock.add(16 * time.Minute)
	if res, _ := s.login(b, "ada", "correct horse battery"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("after the lock: %d", res.StatusCode)
	}
}

func TestSessionsExpire(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b := s.browser()
	s.setup(b, "ada", "correct horse battery")
	if code, _, _ := s.get(b, "/"); code != http.StatusOK {
		t.Fatalf("signed in: %d", code)
	}
	s.clock.add(12*time.Hour + time.Second)
	if code, loc, _ := s.get(b, "/"); code != http.StatusSeeOther || loc != "/login" {
		t.Fatalf("after the session's lifetime: %d → %q", code, loc)
	}
}
