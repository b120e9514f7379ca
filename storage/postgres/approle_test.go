package postgres_test

import (
	"context"
	"testing"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/storagetest"
)

// appLogin is a login role that is a member of postgram_app (migration
// 013): what a server connects as in production, subject to row-level
// security.
const appLogin = "postgram_test_srv"

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
	st, err := postgres.Open(ctx, postgres.Config{URL: pgtest.AppLogin(t, dsn, appLogin), OwnerURL: dsn, MaxConns: 8})
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
