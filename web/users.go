package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/web/password"
)

// User management (admins) and a user's own account: password change and
// the optional second factor (TOTP, RFC 6238, with single-use recovery
// codes of which only hashes are stored).

const recoveryCodes = 10

type userRow struct {
	ID, Name, Role, Key, LastLogin string
	TOTP, Locked, Self             bool
}

type keyOption struct{ ID, Label string }

type usersPage struct {
	page
	Users []userRow
	Keys  []keyOption
}

// adminOnly resolves the signed-in user and refuses non-admins.
func (h *Handler) adminOnly(w http.ResponseWriter, r *http.Request, form bool) *current {
	var cur *current
	if form {
		var ok bool
		if cur, _, ok = h.formSession(w, r); !ok {
			return nil
		}
	} else if cur, _ = h.signedIn(w, r); cur == nil {
		return nil
	}
	if cur.user.Role != driver.UserAdmin {
		http.Error(w, "only an administrator may manage users", http.StatusForbidden)
		return nil
	}
	return cur
}

func (h *Handler) usersView(w http.ResponseWriter, r *http.Request, cur *current, status int, msg string) {
	p := usersPage{page: h.userPage("Users", cur)}
	p.Error = msg
	users, err := h.auth.users.ListUsers(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	keys, err := h.auth.admin.ListKeys(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	names := map[string]string{}
	now := h.auth.now()
	for _, k := range keys {
		names[k.ID.String()] = k.Name
		if k.RevokedAt == nil && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt)) {
			p.Keys = append(p.Keys, keyOption{ID: k.ID.String(), Label: k.Name + " (" + k.Prefix + "…)"})
		}
	}
	for _, u := range users {
		row := userRow{ID: u.ID.String(), Name: u.Name, Role: string(u.Role), TOTP: u.TOTPSecret != "", Self: u.ID == cur.user.ID,
			Locked: u.LockedUntil != nil && now.Before(*u.LockedUntil)}
		if u.KeyID != "" {
			row.Key = names[u.KeyID]
			if row.Key == "" {
				row.Key = "(deleted key)"
			}
		}
		if u.LastLoginAt != nil {
			row.LastLogin = when(*u.LastLoginAt)
		}
		p.Users = append(p.Users, row)
	}
	w.WriteHeader(status)
	h.render(w, r, "users.html", p)
}

func (h *Handler) usersList(w http.ResponseWriter, r *http.Request) {
	if cur := h.adminOnly(w, r, false); cur != nil {
		h.usersView(w, r, cur, http.StatusOK, "")
	}
}

func (h *Handler) createUser(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, true)
	if cur == nil {
		return
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	role := driver.UserRole(r.PostFormValue("role"))
	key := r.PostFormValue("key")
	bad := func(msg string) { h.usersView(w, r, cur, http.StatusBadRequest, msg) }
	if err := validName(name); err != nil {
		bad(err.Error())
		return
	}
	if err := validPassword(r.PostFormValue("password"), r.PostFormValue("confirm")); err != nil {
		bad(err.Error())
		return
	}
	switch role {
	case driver.UserAdmin:
		key = ""
	case driver.UserMember:
		if _, err := uuid.Parse(key); err != nil {
			bad("key: a member acts with an API key's rights; choose one")
			return
		}
	default:
		bad("role: one of admin, member")
		return
	}
	hash, err := password.Hash(h.auth.params, r.PostFormValue("password"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	u := &driver.User{ID: uuid.New(), Name: name, PasswordHash: hash, Role: role, KeyID: key, CreatedAt: h.auth.now()}
	if err := h.auth.users.CreateUser(r.Context(), u); err != nil {
		if errors.Is(err, driver.ErrConflict) {
			bad("name: " + name + " is taken")
			return
		}
		h.fail(w, r, err)
		return
	}
	h.audit(r, cur, "web.user.create", map[string]any{"user": name, "role": string(role), "key_id": key})
	http.Redirect(w, r, "/users", http.StatusSeeOther)
}

func (h *Handler) deleteUser(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, true)
	if cur == nil {
		return
	}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		http.Error(w, "invalid user id", http.StatusBadRequest)
		return
	}
	if id == cur.user.ID {
		h.usersView(w, r, cur, http.StatusBadRequest, "you cannot delete yourself")
		return
	}
	u, err := h.auth.users.UserByID(r.Context(), id)
	if err == nil {
		err = h.auth.users.DeleteUser(r.Context(), id)
	}
	if errors.Is(err, driver.ErrNotFound) {
		http.Error(w, "no such user", http.StatusNotFound)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.audit(r, cur, "web.user.delete", map[string]any{"user": u.Name})
	http.Redirect(w, r, "/users", http.StatusSeeOther)
}

// audit records a web-app operation in the store's audit log, as the
// operator, naming the user who did it.
func (h *Handler) audit(r *http.Request, cur *current, op string, details map[string]any) {
	details["by"] = cur.user.Name
	if err := h.auth.admin.RecordAudit(r.Context(), nil, op, details); err != nil {
		h.log.WarnContext(r.Context(), "web: audit", "op", op, "err", err)
	}
}

type accountPage struct {
	page
	TOTP     bool
	Secret   string // enrolment: the new secret, shown once
	URL      string // its otpauth:// URL
	Recovery []string
	Message  string
}

func (h *Handler) account(w http.ResponseWriter, r *http.Request) {
	cur, c := h.signedIn(w, r)
	if c == nil {
		return
	}
	h.render(w, r, "account.html", accountPage{page: h.userPage("Your account", cur), TOTP: cur.user.TOTPSecret != ""})
}

func (h *Handler) accountError(w http.ResponseWriter, r *http.Request, cur *current, status int, msg string) {
	p := accountPage{page: h.userPage("Your account", cur), TOTP: cur.user.TOTPSecret != ""}
	p.Error = msg
	w.WriteHeader(status)
	h.render(w, r, "account.html", p)
}

// changePassword checks the current password, stores the new one and
// ends every other session of the user.
func (h *Handler) changePassword(w http.ResponseWriter, r *http.Request) {
	cur, _, ok := h.formSession(w, r)
	if !ok {
		return
	}
	if ok, err := password.Check(cur.user.PasswordHash, r.PostFormValue("current")); err != nil || !ok {
		h.accountError(w, r, cur, http.StatusBadRequest, "current: not your password")
		return
	}
	if err := validPassword(r.PostFormValue("password"), r.PostFormValue("confirm")); err != nil {
		h.accountError(w, r, cur, http.StatusBadRequest, err.Error())
		return
	}
	hash, err := password.Hash(h.auth.params, r.PostFormValue("password"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	u := *cur.user
	u.PasswordHash = hash
	if err := h.auth.users.UpdateUser(r.Context(), &u); err != nil {
		h.fail(w, r, err)
		return
	}
	if _, err := h.auth.users.DeleteUserSessions(r.Context(), u.ID); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.auth.startSession(w, r, &u); err != nil {
		h.fail(w, r, err)
		return
	}
	h.audit(r, cur, "web.password.change", map[string]any{})
	http.Redirect(w, r, "/account", http.StatusSeeOther)
}

// totpStart shows a new secret and asks for a code from it.
func (h *Handler) totpStart(w http.ResponseWriter, r *http.Request) {
	cur, _, ok := h.formSession(w, r)
	if !ok {
		return
	}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: "Postgram", AccountName: cur.user.Name})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, "account.html", accountPage{page: h.userPage("Your account", cur), Secret: key.Secret(), URL: key.URL()})
}

// totpEnable turns the second factor on once a code from the new secret
// checks, and shows the recovery codes once.
func (h *Handler) totpEnable(w http.ResponseWriter, r *http.Request) {
	cur, _, ok := h.formSession(w, r)
	if !ok {
		return
	}
	secret := strings.TrimSpace(r.PostFormValue("secret"))
	if !totpValid(r.PostFormValue("code"), secret, h.auth.now()) {
		p := accountPage{page: h.userPage("Your account", cur), Secret: secret, URL: r.PostFormValue("url")}
		p.Error = "code: it does not match; enter the current code from your authenticator app"
		w.WriteHeader(http.StatusBadRequest)
		h.render(w, r, "account.html", p)
		return
	}
	codes := make([]string, recoveryCodes)
	hashes := make([]string, recoveryCodes)
	for i := range codes {
		codes[i] = randomToken()[:16]
		hashes[i] = recoveryHash(codes[i])
	}
	u := *cur.user
	u.TOTPSecret, u.Recovery = secret, hashes
	if err := h.auth.users.UpdateUser(r.Context(), &u); err != nil {
		h.fail(w, r, err)
		return
	}
	h.audit(r, cur, "web.totp.enable", map[string]any{})
	h.render(w, r, "account.html", accountPage{page: h.userPage("Your account", cur), TOTP: true, Recovery: codes,
		Message: "Two-factor sign-in is on. Keep these recovery codes somewhere safe: each works once, and they are not shown again."})
}

// totpDisable turns the second factor off (the password is asked again).
func (h *Handler) totpDisable(w http.ResponseWriter, r *http.Request) {
	cur, _, ok := h.formSession(w, r)
	if !ok {
		return
	}
	if ok, err := password.Check(cur.user.PasswordHash, r.PostFormValue("current")); err != nil || !ok {
		h.accountError(w, r, cur, http.StatusBadRequest, "current: not your password")
		return
	}
	u := *cur.user
	u.TOTPSecret, u.Recovery = "", nil
	if err := h.auth.users.UpdateUser(r.Context(), &u); err != nil {
		h.fail(w, r, err)
		return
	}
	h.audit(r, cur, "web.totp.disable", map[string]any{})
	http.Redirect(w, r, "/account", http.StatusSeeOther)
}

func totpValid(code, secret string, now time.Time) bool {
	code = strings.ReplaceAll(strings.TrimSpace(code), " ", "")
	if len(code) != 6 || secret == "" {
		return false
	}
	ok, err := totp.ValidateCustom(code, secret, now, totp.ValidateOpts{Period: 30, Skew: 1, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	return err == nil && ok
}

func recoveryHash(code string) string {
	h := sha256.Sum256([]byte(strings.TrimSpace(code)))
	return hex.EncodeToString(h[:])
}

// secondFactor checks a signed-in attempt's code for u: a current TOTP
// code, or an unused recovery code (then spent). It reports whether it
// passed.
func (s *signIn) secondFactor(r *http.Request, u *driver.User, code string) (bool, error) {
	if totpValid(code, u.TOTPSecret, s.now()) {
		return true, nil
	}
	h := recoveryHash(code)
	for i, rc := range u.Recovery {
		if subtle.ConstantTimeCompare([]byte(rc), []byte(h)) == 1 {
			next := *u
			next.Recovery = append(append([]string(nil), u.Recovery[:i]...), u.Recovery[i+1:]...)
			if err := s.users.UpdateUser(r.Context(), &next); err != nil {
				return false, err
			}
			return true, nil
		}
	}
	return false, nil
}
