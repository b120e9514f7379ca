package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/transport/apierror"
)

// TestKeyExpiryAndRotation: key create --expires-in sets an expiry; key
// rotate issues a successor with the same rights and ends the old key at
// the end of the overlap; key.create's audit entry records the rights.
func TestKeyExpiryAndRotation(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"POSTGRAM_DATA_DIR": t.TempDir(), "LOG_LEVEL": "error"}
	mustAdmin(t, vars, "", "migrate")
	ctx := context.Background()

	var created struct {
		Key    string          `json:"key"`
		APIKey postgram.APIKey `json:"api_key"`
	}
	out := mustAdmin(t, vars, "", "key", "create", "ci", "--scopes", "read,write", "--types", "memory", "--visibilities", "shared",
		"--client-id", "ci-bot", "--expires-in", "90d", "--json")
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatal(err)
	}
	exp := created.APIKey.ExpiresAt
	if exp == nil || time.Until(*exp) < 89*24*time.Hour || time.Until(*exp) > 90*24*time.Hour {
		t.Fatalf("--expires-in 90d: expires_at %v", exp)
	}
	if out := mustAdmin(t, vars, "", "key", "list"); !strings.Contains(out, "EXPIRES") || !strings.Contains(out, exp.Format(time.RFC3339)) {
		t.Fatalf("key list shows no expiry:\n%s", out)
	}
	for _, bad := range []string{"soon", "-1d", "90x", "1.5d"} {
		_, errs, code := admin(t, vars, "", "key", "create", "x", "--expires-in", bad)
		if code != apierror.ExitUsage || !strings.Contains(errs, "--expires-in") {
			t.Fatalf("--expires-in %s: exit %d %s", bad, code, errs)
		}
	}
	audit := mustAdmin(t, vars, "", "audit", "--operation", "key.create", "--json")
	for _, want := range []string{`"allowed_types":["memory"]`, `"allowed_visibilities":["shared"]`, `"client_id":"ci-bot"`, `"expires_at":"` + exp.Format("2006-01-02")} {
		if !strings.Contains(audit, want) {
			t.Fatalf("key.create audit lacks %s:\n%s", want, audit)
		}
	}

	id := created.APIKey.ID.String()
	// --overlap 0 needs --yes; --dry-run changes nothing.
	if _, _, code := admin(t, vars, "", "key", "rotate", id, "--overlap", "0"); code != apierror.ExitUsage {
		t.Fatalf("rotate --overlap 0 without --yes: exit %d", code)
	}
	if out := mustAdmin(t, vars, "", "key", "rotate", id, "--dry-run"); !strings.Contains(out, "would issue a successor") {
		t.Fatalf("rotate --dry-run: %q", out)
	}
	var rot postgram.RotatedKey
	if err := json.Unmarshal([]byte(mustAdmin(t, vars, "", "key", "rotate", id, "--overlap", "2h", "--json")), &rot); err != nil {
		t.Fatal(err)
	}
	if end := rot.Previous.ExpiresAt; end == nil || time.Until(*end) > 2*time.Hour || time.Until(*end) < 2*time.Hour-time.Minute {
		t.Fatalf("old key's expiry after rotate --overlap 2h: %v", end)
	}
	if rot.Key.ClientID != "ci-bot" || rot.Key.ExpiresAt == nil || time.Until(*rot.Key.ExpiresAt) < 89*24*time.Hour {
		t.Fatalf("successor: %+v", rot.Key)
	}

	// Both keys work during the overlap, with the same rights.
	c, _ := serverClient(t, vars, nil)
	for _, tok := range []string{created.Key, rot.Token} {
		got, err := postgramtest.Admin(t, c).Authenticate(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		if p := got.Principal(); p.ClientID != "ci-bot" || !p.Has(postgram.ScopeWrite) || len(p.AllowedTypes) != 1 {
			t.Fatalf("principal %+v", p)
		}
	}
	// Rotating the successor with --overlap 0 --yes ends it at once.
	out = mustAdmin(t, vars, "", "key", "rotate", rot.Key.ID.String(), "--overlap", "0", "--yes")
	if !strings.HasPrefix(out, "pgm-") {
		t.Fatalf("rotate printed %q", out)
	}
	if _, err := postgramtest.Admin(t, c).Authenticate(ctx, rot.Token); !errors.Is(err, postgram.ErrUnauthorized) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("a key rotated with --overlap 0: %v", err)
	}
	if _, err := postgramtest.Admin(t, c).Authenticate(ctx, strings.TrimSpace(out)); err != nil {
		t.Fatal(err)
	}
}
