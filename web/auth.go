package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/web/password"
)

// Cookie names. The session cookie holds a random token whose SHA-256 is
// the stored session's key; the pre-session cookie carries the CSRF token
// of the sign-in and setup forms (double submit), before a session exists.
const (
	sessionCookie = "pgm_session"
	formCookie    = "pgm_form"
)

// signIn is the sign-in part of the handler: onboarding (the first admin
// user, guarded by an admin API key), sessions, CSRF and lockout.
type signIn struct {
	log        *slog.Logger
	users      driver.UserStorage
	admin      *postgram.Admin
	params     password.Params
	ttl        time.Duration
	maxFail    int
	lockFor    time.Duration
	secure     bool
	now        func() time.Time
	perIP      *failureLimiter
	dummyHash  string // checked when the name is unknown, so timing does not tell
	dummyOnce  sync.Once
	dummyError error
}

type ctxKey struct{}

// current is the signed-in user and session of a request.
type current struct {
	user    *driver.User
	session *driver.WebSession
}

func userFrom(ctx context.Context) *current {
	c, _ := ctx.Value(ctxKey{}).(*current)
	return c
}

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("web: crypto/rand failed: %v", err)) // the runtime never returns an error here
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

func (s *signIn) cookie(r *http.Request, name, value string, maxAge time.Duration) *http.Cookie {
	c := &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: s.secure || r.TLS != nil}
	if maxAge < 0 {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(maxAge / time.Second)
	}
	return c
}

// session resolves the request's session cookie ("" user when none or
// expired).
func (s *signIn) session(r *http.Request) (*current, error) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" || len(ck.Value) > 100 {
		return nil, nil
	}
	ws, err := s.users.SessionByHash(r.Context(), tokenHash(ck.Value))
	if errors.Is(err, driver.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !s.now().Before(ws.ExpiresAt) {
		_ = s.users.DeleteSession(r.Context(), ws.TokenHash)
		return nil, nil
	}
	u, err := s.users.UserByID(r.Context(), ws.UserID)
	if errors.Is(err, driver.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &current{user: u, session: ws}, nil
}

// formToken returns the pre-session CSRF token of the request, setting a
// new one when it has none.
func (s *signIn) formToken(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(formCookie); err == nil && len(ck.Value) == 43 {
		return ck.Value
	}
	t := randomToken()
	http.SetCookie(w, s.cookie(r, formCookie, t, time.Hour))
	return t
}

// checkFormToken compares the form's csrf field with the pre-session
// cookie (double submit; SameSite=Strict keeps the cookie off cross-site
// posts too).
func checkFormToken(r *http.Request) bool {
	ck, err := r.Cookie(formCookie)
	return err == nil && ck.Value != "" && subtle.ConstantTimeCompare([]byte(ck.Value), []byte(r.PostFormValue("csrf"))) == 1
}

// checkSessionToken compares the form's csrf field with the session's.
func checkSessionToken(r *http.Request, cur *current) bool {
	return cur != nil && subtle.ConstantTimeCompare([]byte(cur.session.CSRF), []byte(r.PostFormValue("csrf"))) == 1
}

// startSession creates a session for u and sets its cookie.
func (s *signIn) startSession(w http.ResponseWriter, r *http.Request, u *driver.User) error {
	token := randomToken()
	now := s.now()
	ws := &driver.WebSession{TokenHash: tokenHash(token), UserID: u.ID, CSRF: randomToken(), CreatedAt: now,
		ExpiresAt: now.Add(s.ttl)}
	if err := s.users.CreateSession(r.Context(), ws); err != nil {
		return err
	}
	// Sessions that were never signed out expire in the table: sweep them
	// on each sign-in (a best effort; a failure only leaves them longer).
	if _, err := s.users.DeleteExpiredSessions(r.Context(), now); err != nil && s.log != nil {
		s.log.WarnContext(r.Context(), "web: sweeping expired sessions failed", "err", err)
	}
	http.SetCookie(w, s.cookie(r, sessionCookie, token, s.ttl))
	http.SetCookie(w, s.cookie(r, formCookie, "", -1))
	return nil
}

// validName checks a login name.
func validName(name string) error {
	if name == "" {
		return errors.New("name: required")
	}
	if len(name) > 100 || !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return errors.New("name: at most 100 characters, no control characters")
	}
	return nil
}

// validPassword checks a new password and its confirmation.
func validPassword(pw, confirm string) error {
	if err := password.Valid(pw); err != nil {
		return err
	}
	if pw != confirm {
		return errors.New("confirm: the two passwords differ")
	}
	return nil
}

// isAdminKey reports whether c (an authenticated API key) is an admin key:
// every scope, no limit on types or visibilities.
func isAdminKey(c *postgram.Client) bool {
	p := c.Principal()
	if p == nil {
		return true
	}
	for _, sc := range postgram.AllScopes {
		if !p.Has(sc) {
			return false
		}
	}
	return len(p.AllowedTypes) == 0 && len(p.AllowedVisibilities) == 0
}

// createFirstAdmin runs onboarding: it verifies the admin key and creates
// the first user, an admin. It refuses once any user exists.
func (s *signIn) createFirstAdmin(ctx context.Context, key, name, pw, confirm string) (*driver.User, string) {
	if n, err := s.users.CountUsers(ctx); err != nil {
		return nil, "the store cannot be read right now; try again"
	} else if n > 0 {
		return nil, "setup is done: sign in instead"
	}
	c, err := s.admin.Authenticate(ctx, strings.TrimSpace(key))
	if err != nil || !isAdminKey(c) {
		return nil, "admin_key: not an admin API key (use the bootstrap key the server printed at its first start)"
	}
	if err := validName(name); err != nil {
		return nil, err.Error()
	}
	if err := validPassword(pw, confirm); err != nil {
		return nil, err.Error()
	}
	hash, err := password.Hash(s.params, pw)
	if err != nil {
		return nil, "the password could not be hashed; try again"
	}
	u := &driver.User{ID: uuid.New(), Name: name, PasswordHash: hash, Role: driver.UserAdmin, CreatedAt: s.now()}
	if err := s.users.CreateUser(ctx, u); err != nil {
		if errors.Is(err, driver.ErrConflict) {
			return nil, "setup is done: sign in instead"
		}
		return nil, "the user could not be saved; try again"
	}
	_ = s.admin.RecordAudit(ctx, c.Principal(), "web.setup", map[string]any{"user": name})
	return u, ""
}

// login checks a name and password. It returns the user, or a message
// that does not tell whether the name exists (unless it is locked).
func (s *signIn) login(r *http.Request, name, pw, code string) (*driver.User, string, error) {
	ctx := r.Context()
	const wrong = "wrong name or password"
	if name == "" || len(pw) > password.MaxLen {
		return nil, wrong, nil
	}
	u, err := s.users.UserByName(ctx, name)
	if errors.Is(err, driver.ErrNotFound) {
		s.burnDummy(pw)
		return nil, wrong, nil
	}
	if err != nil {
		return nil, "", err
	}
	now := s.now()
	if u.LockedUntil != nil && now.Before(*u.LockedUntil) {
		return nil, fmt.Sprintf("too many failed sign-ins: this account is locked until %s UTC", u.LockedUntil.UTC().Format("15:04")), nil
	}
	ok, err := password.Check(u.PasswordHash, pw)
	if err != nil {
		return nil, "", err
	}
	msg := wrong
	if ok && u.TOTPSecret != "" {
		if ok, err = s.secondFactor(r, u, code); err != nil {
			return nil, "", err
		}
		msg = "code: enter the current code from your authenticator app, or a recovery code"
	}
	if !ok {
		failed := u.FailedLogins + 1
		var lock *time.Time
		if failed >= s.maxFail {
			t := now.Add(s.lockFor)
			lock, failed = &t, 0
		}
		if err := s.users.SetLoginState(ctx, u.ID, failed, lock, nil); err != nil {
			return nil, "", err
		}
		return nil, msg, nil
	}
	if err := s.users.SetLoginState(ctx, u.ID, 0, nil, &now); err != nil {
		return nil, "", err
	}
	return u, "", nil
}

// burnDummy spends a password check's time on an unknown name.
func (s *signIn) burnDummy(pw string) {
	s.dummyOnce.Do(func() { s.dummyHash, s.dummyError = password.Hash(s.params, randomToken()) })
	if s.dummyError == nil {
		_, _ = password.Check(s.dummyHash, pw)
	}
}

// failureLimiter counts failed sign-ins per client address in a sliding
// minute, so one address cannot try many names.
type failureLimiter struct {
	mu    sync.Mutex
	max   int
	fails map[string][]time.Time
}

func newFailureLimiter(max int) *failureLimiter {
	return &failureLimiter{max: max, fails: map[string][]time.Time{}}
}

func (l *failureLimiter) blocked(addr string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	recent := l.fails[addr][:0]
	for _, t := range l.fails[addr] {
		if now.Sub(t) < time.Minute {
			recent = append(recent, t)
		}
	}
	if len(recent) == 0 {
		delete(l.fails, addr)
	} else {
		l.fails[addr] = recent
	}
	return len(recent) >= l.max
}

func (l *failureLimiter) fail(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.fails) > 100_000 { // bounded memory under a flood of addresses
		clear(l.fails)
	}
	l.fails[addr] = append(l.fails[addr], now)
}

func clientAddr(r *http.Request) string {
	host := r.RemoteAddr
	if i := strings.LastIndexByte(host, ':'); i > 0 {
		host = host[:i]
	}
	return host
}
