package postgres_test

import (
	"context"
	"net/url"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/storagetest"
)

// appLogin is a login role that is a member of postgram_app (migration
// 013): what a server connects as in production, subject to row-level
// security.
const appLogin = "postgram_test_srv"

var appLoginOnce sync.Once

// openAsApp migrates a fresh schema as its owner and opens the store as
// appLogin: every operation must then set its workspace on the
// connection, or row-level security hides its rows.
func openAsApp(t *testing.T) driver.Storage {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	owner, err := postgres.Open(ctx, postgres.Config{URL: dsn, MaxConns: 2})
	if err != nil {
		t.Fatalf("open as owner: %v", err)
	}
	defer owner.Close()
	if err := owner.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	appLoginOnce.Do(func() {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '`+appLogin+`') THEN
        CREATE ROLE `+appLogin+` LOGIN NOSUPERUSER NOBYPASSRLS;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END
$$`); err != nil {
			t.Fatalf("create login role: %v", err)
		}
		if _, err := conn.Exec(ctx, "GRANT postgram_app TO "+appLogin); err != nil {
			t.Fatalf("grant postgram_app: %v", err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(appLogin)
	st, err := postgres.Open(ctx, postgres.Config{URL: u.String(), OwnerURL: dsn, MaxConns: 8})
	if err != nil {
		t.Fatalf("open as %s: %v", appLogin, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestConformanceAsAppRole runs the conformance suite with the store
// connected as a role subject to row-level security.
func TestConformanceAsAppRole(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, openAsApp)
}

// TestSettingsAdvice reads the test cluster's settings (as the app role,
// which may read them) without error.
func TestSettingsAdvice(t *testing.T) {
	t.Parallel()
	st := openAsApp(t).(*postgres.Store)
	if _, err := st.SettingsAdvice(context.Background()); err != nil {
		t.Fatal(err)
	}
}
