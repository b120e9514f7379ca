package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/web/password"
)

// TestUserCommands: the way back into the web app — create users, reset a
// password (which unlocks the user, ends its sessions and can drop a lost
// second factor), list, delete; bad input names what is wrong.
func TestUserCommands(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"POSTGRAM_DATA_DIR": t.TempDir(), "LOG_LEVEL": "error"}
	mustAdmin(t, vars, "", "migrate")
	mustAdmin(t, vars, "a long admin password\n", "user", "create", "ada", "--role", "admin")

	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"short\n", []string{"user", "create", "bo", "--role", "admin"}, "password: at least 12"},
		{"", []string{"user", "create", "bo", "--role", "admin"}, "standard input"},
		{"a long password!!\n", []string{"user", "create", "bo", "--role", "root"}, "--role"},
		{"a long password!!\n", []string{"user", "create", "bo", "--role", "member"}, "--key"},
		{"a long password!!\n", []string{"user", "create", "bo", "--role", "member", "--key", "nope"}, "--key"},
		{"", []string{"user", "delete", "ada"}, "--yes"},
	} {
		_, errs, code := admin(t, vars, tc.stdin, tc.args...)
		if code != apierror.ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %s; want usage naming %q", tc.args, code, errs, tc.want)
		}
	}
	if _, errs, code := admin(t, vars, "a long password!!\n", "user", "create", "ada", "--role", "admin"); code == 0 || !strings.Contains(errs, "the name is taken") {
		t.Errorf("a taken name: exit %d %s", code, errs)
	}

	// Lock ada out, give her a second factor and a session, then reset.
	_, st := serverClient(t, vars, nil)
	ctx := context.Background()
	u, err := st.UserByName(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := password.Check(u.PasswordHash, "a long admin password"); !ok {
		t.Fatal("the stored hash does not check")
	}
	lock := time.Now().Add(time.Hour)
	u.TOTPSecret = "JBSWY3DPEHPK3PXP"
	if err := st.UpdateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := st.SetLoginState(ctx, u.ID, 3, &lock, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, &driver.WebSession{TokenHash: "h", UserID: u.ID, CSRF: "c", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	_, errs, code := admin(t, vars, "a brand new password\n", "user", "reset-password", "ada", "--disable-2fa")
	if code != 0 || !strings.Contains(errs, "ended 1 session(s); two-factor sign-in is off") {
		t.Fatalf("reset-password: exit %d %s", code, errs)
	}
	u, _ = st.UserByName(ctx, "ada")
	if ok, _ := password.Check(u.PasswordHash, "a brand new password"); !ok || u.LockedUntil != nil || u.FailedLogins != 0 || u.TOTPSecret != "" {
		t.Fatalf("after reset: %+v", u)
	}
	if _, errs, code := admin(t, vars, "a brand new password\n", "user", "reset-password", "nobody"); code == 0 || !strings.Contains(errs, "not found") {
		t.Errorf("reset an unknown user: exit %d %s", code, errs)
	}

	var list []map[string]any
	if err := json.Unmarshal([]byte(mustAdmin(t, vars, "", "user", "list", "--json")), &list); err != nil || len(list) != 1 || list[0]["name"] != "ada" {
		t.Fatalf("user list: %v %v", list, err)
	}
	if out := mustAdmin(t, vars, "", "user", "list"); !strings.Contains(out, "ada") || !strings.Contains(out, "admin") {
		t.Fatalf("user list (table): %s", out)
	}
	mustAdmin(t, vars, "", "user", "delete", "ada", "--yes")
	if out := mustAdmin(t, vars, "", "audit", "--operation", "user.delete"); !strings.Contains(out, "user.delete") {
		t.Fatalf("audit lacks user.delete:\n%s", out)
	}
	if n, _ := st.CountUsers(ctx); n != 0 {
		t.Fatalf("%d users after delete", n)
	}
}
