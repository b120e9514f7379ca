package web

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/pquerna/otp/totp"
)

func TestUserManagement(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b, csrf := s.signedInAdmin()
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
	add := func(form url.Values) (*http.Response, string) {
		form.Set("csrf", csrf)
		return s.post(b, "/users", form)
	}
	member := url.Values{"name": {"rita"}, "password": {"member password!"}, "confirm": {"member password!"}, "role": {"member"}, "key": {reader}}
	if res, body := add(member); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("add member: %d\n%s", res.StatusCode, body)
	}
	for _, tc := range []struct {
		change url.Values
		want   string
	}{
		{url.Values{}, "name: rita is taken"},
		{url.Values{"name": {"tom"}, "key": {""}}, "key: a member acts with an API key"},
		{url.Values{"name": {"tom"}, "role": {"root"}}, "role: one of admin, member"},
		{url.Values{"name": {"tom"}, "password": {"short"}, "confirm": {"short"}}, "password: at least 12"},
	} {
		f := url.Values{}
		for k, v := range member {
			f[k] = v
		}
		for k, v := range tc.change {
			f[k] = v
		}
		if res, body := add(f); res.StatusCode != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("add %v: %d, want 400 %q", tc.change, res.StatusCode, tc.want)
		}
	}
	code, _, body := s.get(b, "/users")
	if code != http.StatusOK || !strings.Contains(body, "<td>rita</td><td>member</td><td>reader</td>") {
		t.Fatalf("users page: %d\n%s", code, body)
	}

	// The member signs in; the users page is for admins only.
	mb := s.browser()
	if res, _ := s.login(mb, "rita", "member password!"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("member sign-in: %d", res.StatusCode)
	}
	if code, _, _ := s.get(mb, "/users"); code != http.StatusForbidden {
		t.Fatalf("member on /users: %d", code)
	}
	// Deleting the member ends its session; an admin cannot delete itself.
	id := regexp.MustCompile(`action="/users/([0-9a-f-]{36})/delete"`).FindStringSubmatch(body)[1]
	if res, _ := s.post(b, "/users/"+id+"/delete", url.Values{"csrf": {csrf}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %d", res.StatusCode)
	}
	if code, loc, _ := s.get(mb, "/search"); code != http.StatusSeeOther || loc != "/login" {
		t.Fatalf("deleted member: %d → %q", code, loc)
	}
	ada, _ := s.store.UserByName(t.Context(), "ada")
	if res, body := s.post(b, "/users/"+ada.ID.String()+"/delete", url.Values{"csrf": {csrf}}); res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "cannot delete yourself") {
		t.Fatalf("self delete: %d", res.StatusCode)
	}
}

func TestPasswordChange(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b, csrf := s.signedInAdmin()
	other := s.browser()
	s.login(other, "ada", "correct horse battery")
	res, body := s.post(b, "/account/password", url.Values{"csrf": {csrf}, "current": {"wrong"}, "password": {"a new long password"}, "confirm": {"a new long password"}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "current: not your password") {
		t.Fatalf("wrong current password: %d", res.StatusCode)
	}
	res, _ = s.post(b, "/account/password", url.Values{"csrf": {csrf}, "current": {"correct horse battery"}, "password": {"a new long password"}, "confirm": {"a new long password"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("change: %d", res.StatusCode)
	}
	if code, _, _ := s.get(b, "/account"); code != http.StatusOK {
		t.Fatalf("this browser stays signed in: %d", code)
	}
	if code, _, _ := s.get(other, "/account"); code != http.StatusSeeOther {
		t.Fatalf("the other session survived the password change: %d", code)
	}
	if res, _ := s.login(s.browser(), "ada", "correct horse battery"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("old password: %d", res.StatusCode)
	}
	if res, _ := s.login(s.browser(), "ada", "a new long password"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("new password: %d", res.StatusCode)
	}
}

func TestTwoFactorSignIn(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b, csrf := s.signedInAdmin()
	res, body := s.post(b, "/account/totp", url.Values{"csrf": {csrf}})
	m := regexp.MustCompile(`<code class="secret">([A-Z2-7]+)</code>`).FindStringSubmatch(body)
	if res.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("start: %d\n%s", res.StatusCode, body)
	}
	secret := m[1]
	if res, body := s.post(b, "/account/totp/enable", url.Values{"csrf": {csrf}, "secret": {secret}, "code": {"000000"}}); res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "code: it does not match") {
		t.Fatalf("wrong code: %d", res.StatusCode)
	}
	code, err := totp.GenerateCode(secret, s.clock.now())
	if err != nil {
		t.Fatal(err)
	}
	res, body = s.post(b, "/account/totp/enable", url.Values{"csrf": {csrf}, "secret": {secret}, "code": {code}})
	recovery := regexp.MustCompile(`<li><code>([A-Za-z0-9_-]{16})</code></li>`).FindAllStringSubmatch(body, -1)
	if res.StatusCode != http.StatusOK || len(recovery) != recoveryCodes {
		t.Fatalf("enable: %d, %d recovery codes\n%s", res.StatusCode, len(recovery), body)
	}

	login := func(code string) (*http.Response, string) {
		nb := s.browser()
		return s.post(nb, "/login", url.Values{"csrf": {s.csrf(nb, "/login")}, "name": {"ada"}, "password": {"correct horse battery"}, "code": {code}})
	}
	if res, body := login(""); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "code: enter the current code") {
		t.Fatalf("password alone: %d\n%s", res.StatusCode, body)
	}
	s.clock.add(60e9) // a minute later: a fresh code
	code, _ = totp.GenerateCode(secret, s.clock.now())
	if res, _ := login(code); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("password and code: %d", res.StatusCode)
	}
	if res, _ := login(recovery[0][1]); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("recovery code: %d", res.StatusCode)
	}
	if res, _ := login(recovery[0][1]); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a recovery code twice: %d", res.StatusCode)
	}
	u, _ := s.store.UserByName(t.Context(), "ada")
	if len(u.Recovery) != recoveryCodes-1 || strings.Contains(strings.Join(u.Recovery, ","), recovery[1][1]) {
		t.Fatalf("stored recovery codes: %d (hashes only)", len(u.Recovery))
	}
	// Turning it off needs the password.
	if res, _ := s.post(b, "/account/totp/disable", url.Values{"csrf": {csrf}, "current": {"nope"}}); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("disable with a wrong password: %d", res.StatusCode)
	}
	if res, _ := s.post(b, "/account/totp/disable", url.Values{"csrf": {csrf}, "current": {"correct horse battery"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("disable: %d", res.StatusCode)
	}
	if res, _ := login(""); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("password alone after disabling: %d", res.StatusCode)
	}
}
