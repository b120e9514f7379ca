package web

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
)

func TestAdminConsole(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b, csrf := s.signedInAdmin()
	s.store1("A note about the console.", postgram.TypeMemory)

	code, _, body := s.get(b, "/admin")
	if code != http.StatusOK || !strings.Contains(body, "<h2>Health: <span class=\"status-ok\">ok</span></h2>") ||
		!strings.Contains(body, "<tr><th>Entities</th><td>1</td></tr>") || !strings.Contains(body, "1 pending") {
		t.Fatalf("console: %d\n%s", code, body)
	}

	// A key is created with its limits and shown once; it works at once.
	res, body := s.post(b, "/admin/keys", url.Values{"csrf": {csrf}, "name": {"ci-bot"}, "scope": {"read", "write"},
		"type": {"task"}, "visibility": {"work"}, "client_id": {"ci"}})
	m := regexp.MustCompile(`<code class="token">(pgm-[^<]+)</code>`).FindStringSubmatch(body)
	if res.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("create key: %d\n%s", res.StatusCode, body)
	}
	c, err := s.admin.Authenticate(context.Background(), m[1])
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Principal(); !p.Has(postgram.ScopeWrite) || p.ClientID != "ci" || len(p.AllowedTypes) != 1 || p.AllowedTypes[0] != postgram.TypeTask {
		t.Fatalf("the key's principal: %+v", p)
	}
	if _, _, body := s.get(b, "/admin/keys"); strings.Contains(body, m[1]) {
		t.Fatal("the key's token is shown again")
	}
	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"name": {"x"}, "scope": {"root"}}, "root"},
		{url.Values{"name": {"x"}, "expires": {"tomorrow"}}, "expires: a date"},
		{url.Values{"name": {""}}, "name"},
	} {
		tc.form.Set("csrf", csrf)
		if res, body := s.post(b, "/admin/keys", tc.form); res.StatusCode != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("create key %v: %d, want 400 naming %q", tc.form, res.StatusCode, tc.want)
		}
	}
	// Revoke.
	_, _, body = s.get(b, "/admin/keys")
	var ciID string
	for _, row := range strings.Split(body, "<tr>") {
		if strings.Contains(row, "<td>ci-bot</td>") {
			ciID = regexp.MustCompile(`/admin/keys/([0-9a-f-]{36})/revoke`).FindStringSubmatch(row)[1]
		}
	}
	if res, _ := s.post(b, "/admin/keys/"+ciID+"/revoke", url.Values{"csrf": {csrf}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
	if _, err := s.admin.Authenticate(context.Background(), m[1]); err == nil {
		t.Fatal("a revoked key still authenticates")
	}

	// The audit log shows what the web app did, filtered by operation.
	code, _, body = s.get(b, "/admin/audit?operation=web.key.create")
	if code != http.StatusOK || !strings.Contains(body, "<td>web.key.create</td>") || strings.Contains(body, "<td>web.key.revoke</td>") {
		t.Fatalf("audit filtered: %d\n%s", code, body)
	}
	if code, _, body := s.get(b, "/admin/audit?since=yesterday"); code != http.StatusBadRequest || !strings.Contains(body, "since: a date") {
		t.Fatalf("audit with a bad date: %d", code)
	}

	// Members never see the console.
	if err := s.store.CreateUser(context.Background(), memberUser(t, s, "rita")); err != nil {
		t.Fatal(err)
	}
	mb := s.browser()
	s.login(mb, "rita", "member password!")
	for _, path := range []string{"/admin", "/admin/keys", "/admin/audit"} {
		if code, _, _ := s.get(mb, path); code != http.StatusForbidden {
			t.Errorf("member on %s: %d", path, code)
		}
	}
}

func TestConsoleRetriesFailures(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b, csrf := s.signedInAdmin()
	res, body := s.post(b, "/admin/queue/retry", url.Values{"csrf": {csrf}, "queue": {"embedding"}})
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "0 failed embedding entities are due again.") {
		t.Fatalf("retry: %d\n%s", res.StatusCode, body)
	}
	res, body = s.post(b, "/admin/queue/retry", url.Values{"csrf": {csrf}, "queue": {"everything"}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "invalid queue") {
		t.Fatalf("retry an unknown queue: %d\n%s", res.StatusCode, body)
	}
}
