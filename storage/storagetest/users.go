package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
)

// testUsers covers the web app's users and sessions: unique names,
// lookups, the sign-in state and sessions with sign-out everywhere.
func testUsers(t *testing.T, open Opener) {
	ctx := t.Context()
	st := open(t)
	if n, err := st.CountUsers(ctx); err != nil || n != 0 {
		t.Fatalf("CountUsers on a new store = %d, %v", n, err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	ada := &driver.User{ID: uuid.New(), Name: "ada", PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA",
		Role: driver.UserAdmin, CreatedAt: now}
	if err := st.CreateUser(ctx, ada); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateUser(ctx, &driver.User{ID: uuid.New(), Name: "ada", PasswordHash: "x", Role: driver.UserMember,
		CreatedAt: now}); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("a second ada: %v, want ErrConflict", err)
	}
	bo := &driver.User{ID: uuid.New(), Name: "bo", PasswordHash: "y", Role: driver.UserMember, KeyID: "key-1", CreatedAt: now}
	if err := st.CreateUser(ctx, bo); err != nil {
		t.Fatal(err)
	}
	if n, _ := st.CountUsers(ctx); n != 2 {
		t.Fatalf("CountUsers = %d, want 2", n)
	}
	got, err := st.UserByName(ctx, "bo")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(bo, got); d != "" {
		t.Fatalf("UserByName (-want +got):\n%s", d)
	}
	if _, err := st.UserByName(ctx, "nobody"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("unknown name: %v", err)
	}
	if _, err := st.UserByID(ctx, uuid.New()); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}

	lock := now.Add(15 * time.Minute)
	if err := st.SetLoginState(ctx, ada.ID, 5, &lock, nil); err != nil {
		t.Fatal(err)
	}
	got, _ = st.UserByID(ctx, ada.ID)
	if got.FailedLogins != 5 || got.LockedUntil == nil || !got.LockedUntil.Equal(lock) || got.LastLoginAt != nil {
		t.Fatalf("after failures: %+v", got)
	}
	if err := st.SetLoginState(ctx, ada.ID, 0, nil, &now); err != nil {
		t.Fatal(err)
	}
	got, _ = st.UserByID(ctx, ada.ID)
	if got.FailedLogins != 0 || got.LockedUntil != nil || got.LastLoginAt == nil || !got.LastLoginAt.Equal(now) {
		t.Fatalf("after success: %+v", got)
	}
	if err := st.SetLoginState(ctx, uuid.New(), 0, nil, nil); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("unknown user's state: %v", err)
	}

	var hashes []string
	for i, u := range []*driver.User{ada, ada, bo} {
		s := &driver.WebSession{TokenHash: uuid.NewString(), UserID: u.ID, CSRF: "csrf" + string(rune('a'+i)),
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, s.TokenHash)
	}
	s, err := st.SessionByHash(ctx, hashes[2])
	if err != nil || s.UserID != bo.ID || s.CSRF != "csrfc" || !s.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("SessionByHash = %+v, %v", s, err)
	}
	if err := st.DeleteSession(ctx, hashes[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SessionByHash(ctx, hashes[2]); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("deleted session: %v", err)
	}
	if n, err := st.DeleteUserSessions(ctx, ada.ID); err != nil || n != 2 {
		t.Fatalf("DeleteUserSessions = %d, %v; want 2", n, err)
	}
	if _, err := st.SessionByHash(ctx, hashes[0]); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("session after sign-out everywhere: %v", err)
	}

	// Expired sessions are swept; live ones stay.
	live := &driver.WebSession{TokenHash: uuid.NewString(), UserID: ada.ID, CSRF: "l", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	dead := &driver.WebSession{TokenHash: uuid.NewString(), UserID: ada.ID, CSRF: "d", CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Hour)}
	for _, ws := range []*driver.WebSession{live, dead} {
		if err := st.CreateSession(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.DeleteExpiredSessions(ctx, now); err != nil || n != 1 {
		t.Fatalf("DeleteExpiredSessions = %d, %v; want 1", n, err)
	}
	if _, err := st.SessionByHash(ctx, live.TokenHash); err != nil {
		t.Fatalf("a live session was swept: %v", err)
	}

	// Update keeps the sign-in state and replaces the rest.
	bo.PasswordHash, bo.Role, bo.KeyID = "z", driver.UserAdmin, ""
	bo.TOTPSecret, bo.Recovery = "JBSWY3DPEHPK3PXP", []string{"h1", "h2"}
	if err := st.UpdateUser(ctx, bo); err != nil {
		t.Fatal(err)
	}
	got, _ = st.UserByID(ctx, bo.ID)
	if d := cmp.Diff(bo, got); d != "" {
		t.Fatalf("after UpdateUser (-want +got):\n%s", d)
	}
	if err := st.UpdateUser(ctx, &driver.User{ID: uuid.New(), Role: driver.UserMember}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("updating an unknown user: %v", err)
	}
	list, err := st.ListUsers(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "ada" || list[1].Name != "bo" {
		t.Fatalf("ListUsers = %v, %v", list, err)
	}
	// Deleting a user ends its sessions.
	s3 := &driver.WebSession{TokenHash: uuid.NewString(), UserID: bo.ID, CSRF: "c", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := st.CreateSession(ctx, s3); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteUser(ctx, bo.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SessionByHash(ctx, s3.TokenHash); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("a deleted user's session: %v", err)
	}
	if err := st.DeleteUser(ctx, bo.ID); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("deleting twice: %v", err)
	}
	if n, _ := st.CountUsers(ctx); n != 1 {
		t.Fatalf("CountUsers after delete = %d", n)
	}
}
