package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
)

// replica opens its own store on dsn (its own pool and change feed, as a
// second postgram-server would) and starts its client's background work.
func replica(t *testing.T, dsn string, ttl time.Duration) (*postgres.Store, *postgram.Client) {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, postgres.Config{URL: dsn, MaxConns: 4})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st, KeyCacheTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	if err := c.Start(runCtx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	return st, c
}

// authSoon polls c until check accepts Authenticate's outcome, for at most
// deadline (the change feed delivers a notification in about a
// millisecond), and returns how long it took.
func authSoon(t *testing.T, c *postgram.Client, token string, deadline time.Duration, check func(*postgram.Client, error) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got, err := postgramtest.Admin(t, c).Authenticate(context.Background(), token)
		if check(got, err) {
			return time.Since(start)
		}
		if time.Since(start) > deadline {
			t.Fatalf("the change did not reach the replica within %v (last: %v)", deadline, err)
		}
		time.Sleep(time.Millisecond)
	}
}

func refused(_ *postgram.Client, err error) bool { return errors.Is(err, postgram.ErrUnauthorized) }

// TestKeyChangesBySQLReachEveryReplica: two servers (each its own store,
// pool and change feed) on one database cache a verified key; narrowing,
// revoking, expiring or deleting it with plain SQL, outside the library,
// is seen by both on their next request (the api_keys trigger notifies).
func TestKeyChangesBySQLReachEveryReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	stA, a := replica(t, dsn, time.Hour) // a TTL far beyond the test: only the notification can evict
	_, b := replica(t, dsn, time.Hour)
	cases := []struct {
		name  string
		sql   string
		check func(*postgram.Client, error) bool
	}{
		{"narrow scopes", `UPDATE api_keys SET scopes = '{read}' WHERE id = $1`, func(c *postgram.Client, err error) bool {
			return err == nil && !c.Principal().Has(postgram.ScopeWrite)
		}},
		{"revoke", `UPDATE api_keys SET revoked_at = now() WHERE id = $1`, refused},
		{"expire", `UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, refused},
		{"delete", `DELETE FROM api_keys WHERE id = $1`, refused},
		{"truncate", `TRUNCATE api_keys`, refused},
	}
	for _, tc := range cases {
		token, k, err := postgramtest.Admin(t, a).CreateKey(ctx, postgram.KeySpec{Name: tc.name, Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []*postgram.Client{a, b} {
			for range 3 { // verified, then answered from the cache
				got, err := postgramtest.Admin(t, c).Authenticate(ctx, token)
				if err != nil || !got.Principal().Has(postgram.ScopeWrite) {
					t.Fatalf("%s: before the change: %v", tc.name, err)
				}
			}
		}
		args := []any{k.ID}
		if tc.name == "truncate" {
			args = nil
		}
		if _, err := stA.Pool().Exec(ctx, tc.sql, args...); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, c := range []*postgram.Client{a, b} {
			d := authSoon(t, c, token, 2*time.Second, tc.check)
			t.Logf("%s reached a replica after %v", tc.name, d)
		}
	}
}

// TestKeyCacheExpires: should a notification be missed (here the trigger
// is dropped), a cached key is verified again after KeyCacheTTL.
func TestKeyCacheExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	st, c := replica(t, dsn, 300*time.Millisecond)
	if _, err := st.Pool().Exec(ctx, `DROP TRIGGER api_keys_notify_change ON api_keys`); err != nil {
		t.Fatal(err)
	}
	token, k, err := postgramtest.Admin(t, c).CreateKey(ctx, postgram.KeySpec{Name: "ttl"})
	if err != nil {
		t.Fatal(err)
	}
	revoke := func(at string) {
		t.Helper()
		if _, err := st.Pool().Exec(ctx, `UPDATE api_keys SET revoked_at = `+at+` WHERE id = $1`, k.ID); err != nil {
			t.Fatal(err)
		}
	}
	// The cache is on once the change feed is connected (Start does not
	// wait for it): authenticate, revoke by SQL, and the key still
	// accepted proves it was cached at read (after read).
	var read time.Time
	for start := time.Now(); ; {
		revoke("NULL")
		read = time.Now()
		if _, err := postgramtest.Admin(t, c).Authenticate(ctx, token); err != nil {
			t.Fatal(err)
		}
		revoke("now()")
		if _, err := postgramtest.Admin(t, c).Authenticate(ctx, token); err == nil {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("the key was never cached: the change feed did not connect")
		}
		time.Sleep(10 * time.Millisecond)
	}
	d := authSoon(t, c, token, 3*time.Second, refused)
	if since := time.Since(read); since < 300*time.Millisecond {
		t.Fatalf("refused %v after the key was read: before the TTL (300ms)", since)
	}
	t.Logf("without a notification the revocation took effect after %v (TTL 300ms)", d)
}
