package storagetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
)

// startBoth starts the background work of each client (on a store with a
// change feed this is what turns the key cache on) and stops it when the
// test ends.
func startBoth(t *testing.T, cs ...*postgram.Client) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, c := range cs {
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Stop(context.Background()) })
	}
}

// refusedSoon waits (up to 2 s, for a change feed's delivery) until c
// refuses token, and returns the refusal.
func refusedSoon(t *testing.T, c *postgram.Client, token string) error {
	t.Helper()
	start := time.Now()
	for {
		_, err := adminOf(t, c).Authenticate(context.Background(), token)
		if err != nil {
			if !errors.Is(err, postgram.ErrUnauthorized) {
				t.Fatalf("Authenticate: %v, want ErrUnauthorized", err)
			}
			return err
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("the key is still accepted 2s after the change")
		}
		time.Sleep(time.Millisecond)
	}
}

// testKeyExpiry: a key created with an expiry works until then and is
// refused afterwards with a message saying it expired, also when it was
// cached; the expiry must lie in the future; key.create's audit entry
// records the key's rights and expiry.
func testKeyExpiry(t *testing.T, open Opener) {
	clk := newClock()
	e := newEnv(t, open, func(c *postgram.Config) { c.Now = clk.now })
	startBoth(t, e.c)
	exp := clk.now().Add(time.Hour)
	token, key, err := e.admin().CreateKey(e.ctx, postgram.KeySpec{Name: "temp", Scopes: []postgram.Scope{postgram.ScopeRead},
		AllowedTypes: []postgram.EntityType{postgram.TypeMemory}, AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared},
		ClientID: "temp-client", ExpiresAt: exp})
	if err != nil {
		t.Fatal(err)
	}
	if key.ExpiresAt == nil || !key.ExpiresAt.Equal(exp) {
		t.Fatalf("created key expires at %v, want %v", key.ExpiresAt, exp)
	}
	keys, err := e.admin().ListKeys(e.ctx)
	if err != nil || len(keys) != 1 || keys[0].ExpiresAt == nil || !keys[0].ExpiresAt.Equal(exp) {
		t.Fatalf("ListKeys: %v %+v", err, keys)
	}
	for range 3 { // the later calls are answered from the cache
		if _, err := e.admin().Authenticate(e.ctx, token); err != nil {
			t.Fatalf("a key before its expiry: %v", err)
		}
	}
	clk.add(time.Hour)
	_, err = e.admin().Authenticate(e.ctx, token)
	if !errors.Is(err, postgram.ErrUnauthorized) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("an expired key: %v, want ErrUnauthorized saying it expired", err)
	}
	// Not cached: a fresh client reads it from the store.
	fresh := e.client(func(c *postgram.Config) { c.Now = clk.now })
	if _, err := adminOf(t, fresh).Authenticate(e.ctx, token); !errors.Is(err, postgram.ErrUnauthorized) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("an expired key (uncached): %v", err)
	}

	_, _, err = e.admin().CreateKey(e.ctx, postgram.KeySpec{Name: "past", ExpiresAt: clk.now().Add(-time.Second)})
	wantErr(t, err, postgram.ErrInvalidArgument, "expires_at")
	_, _, err = e.admin().CreateKey(e.ctx, postgram.KeySpec{Name: "now", ExpiresAt: clk.now()})
	wantErr(t, err, postgram.ErrInvalidArgument, "expires_at")
	_, _, err = e.admin().CreateKey(e.ctx, postgram.KeySpec{Name: "forever", ExpiresAt: clk.now().Add(11 * 365 * 24 * time.Hour)})
	wantErr(t, err, postgram.ErrInvalidArgument, "expires_at")

	audit, err := e.admin().Audit(e.ctx, postgram.AuditFilter{Operation: "key.create"})
	if err != nil || len(audit) != 1 {
		t.Fatalf("key.create audit: %v %+v", err, audit)
	}
	want := map[string]any{
		"key_id": key.ID.String(), "name": "temp", "prefix": key.Prefix, "scopes": []any{"read"},
		"allowed_types": []any{"memory"}, "allowed_visibilities": []any{"shared"}, "client_id": "temp-client",
		"expires_at": exp.Format(time.RFC3339Nano),
	}
	if diff := cmp.Diff(want, audit[0].Details); diff != "" {
		t.Fatalf("key.create audit details (-want +got):\n%s", diff)
	}
}

// testKeyRotation: a successor has the old key's rights; the old key keeps
// working through the overlap window and is refused after it, on every
// replica; revoked and unknown keys cannot be rotated.
func testKeyRotation(t *testing.T, open Opener) {
	clk := newClock()
	e := newEnv(t, open, func(c *postgram.Config) { c.Now = clk.now })
	replicaB := e.client(func(c *postgram.Config) { c.Now = clk.now })
	startBoth(t, e.c, replicaB)
	spec := postgram.KeySpec{Name: "agent", Scopes: []postgram.Scope{postgram.ScopeWrite, postgram.ScopeRead},
		AllowedTypes: []postgram.EntityType{postgram.TypeMemory}, AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared},
		ClientID: "agent-1", ExpiresAt: clk.now().Add(30 * 24 * time.Hour)}
	oldToken, old, err := e.admin().CreateKey(e.ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	clk.add(24 * time.Hour)
	rot, err := e.admin().RotateKey(e.ctx, old.ID, postgram.RotateOptions{Overlap: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if rot.Key.ID == old.ID || rot.Token == oldToken || rot.Key.Name != "agent" {
		t.Fatalf("successor %+v", rot.Key)
	}
	// Same rights; the same lifetime (30 days) from now.
	oldP, newP := postgram.KeyPrincipal(old), postgram.KeyPrincipal(rot.Key)
	newP.KeyID = oldP.KeyID
	if diff := cmp.Diff(oldP, newP); diff != "" {
		t.Fatalf("successor's rights differ (-old +new):\n%s", diff)
	}
	if want := clk.now().Add(30 * 24 * time.Hour); rot.Key.ExpiresAt == nil || !rot.Key.ExpiresAt.Equal(want) {
		t.Fatalf("successor expires at %v, want %v", rot.Key.ExpiresAt, want)
	}
	if want := clk.now().Add(time.Hour); rot.Previous.ExpiresAt == nil || !rot.Previous.ExpiresAt.Equal(want) {
		t.Fatalf("old key expires at %v, want the end of the overlap %v", rot.Previous.ExpiresAt, want)
	}
	for _, c := range []*postgram.Client{e.c, replicaB} {
		for _, tok := range []string{oldToken, rot.Token} {
			got, err := adminOf(t, c).Authenticate(e.ctx, tok)
			if err != nil {
				t.Fatalf("during the overlap: %v", err)
			}
			if p := got.Principal(); p.ClientID != "agent-1" || !p.Has(postgram.ScopeWrite) || p.Has(postgram.ScopeDelete) {
				t.Fatalf("principal %+v", p)
			}
		}
	}
	clk.add(time.Hour)
	for _, c := range []*postgram.Client{e.c, replicaB} {
		if _, err := adminOf(t, c).Authenticate(e.ctx, oldToken); !errors.Is(err, postgram.ErrUnauthorized) || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("the old key after the overlap: %v", err)
		}
		if _, err := adminOf(t, c).Authenticate(e.ctx, rot.Token); err != nil {
			t.Fatalf("the successor after the overlap: %v", err)
		}
	}

	// Overlap 0 ends the old key at once, on the other replica too (which
	// has the key cached with its former expiry: the change must reach it).
	rot2, err := e.admin().RotateKey(e.ctx, rot.Key.ID, postgram.RotateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin().Authenticate(e.ctx, rot.Token); !errors.Is(err, postgram.ErrUnauthorized) {
		t.Fatalf("the rotating replica accepted the key rotated without overlap: %v", err)
	}
	refusedSoon(t, replicaB, rot.Token)
	if _, err := adminOf(t, replicaB).Authenticate(e.ctx, rot2.Token); err != nil {
		t.Fatal(err)
	}
	// An explicit expiry for the successor; a rotation never extends the
	// old key's expiry.
	rot3, err := e.admin().RotateKey(e.ctx, rot2.Key.ID, postgram.RotateOptions{Overlap: 365 * 24 * time.Hour, ExpiresAt: clk.now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if !rot3.Key.ExpiresAt.Equal(clk.now().Add(time.Hour)) || !rot3.Previous.ExpiresAt.Equal(*rot2.Key.ExpiresAt) {
		t.Fatalf("explicit expiry %v, old key's %v (want %v)", rot3.Key.ExpiresAt, rot3.Previous.ExpiresAt, rot2.Key.ExpiresAt)
	}

	_, err = e.admin().RotateKey(e.ctx, uuid.New(), postgram.RotateOptions{})
	wantErr(t, err, postgram.ErrNotFound, "")
	_, err = e.admin().RotateKey(e.ctx, rot3.Key.ID, postgram.RotateOptions{Overlap: -time.Second})
	wantErr(t, err, postgram.ErrInvalidArgument, "overlap")
	if err := e.admin().RevokeKey(e.ctx, rot3.Key.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.admin().RotateKey(e.ctx, rot3.Key.ID, postgram.RotateOptions{})
	wantErr(t, err, postgram.ErrConflict, "")
	scoped := e.admin().As(postgram.KeyPrincipal(rot2.Key))
	if _, err := scoped.Admin(); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("a key may not rotate keys: %v", err)
	}
	audit, err := e.admin().Audit(e.ctx, postgram.AuditFilter{Operation: "key.rotate"})
	if err != nil || len(audit) != 3 {
		t.Fatalf("key.rotate audit: %v %d entries", err, len(audit))
	}
	if d := audit[2].Details; d["previous_key_id"] != old.ID.String() || d["key_id"] != rot.Key.ID.String() || d["client_id"] != "agent-1" {
		t.Fatalf("key.rotate details: %v", d)
	}
	keys, err := e.admin().ListKeys(e.ctx)
	if err != nil || len(keys) != 4 {
		t.Fatalf("ListKeys: %v, %d keys", err, len(keys))
	}
}
