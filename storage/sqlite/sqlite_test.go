package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/storage/storagetest"
)

// openStore opens a fresh, migrated store in its own file under t.TempDir.
func openStore(t testing.TB) *sqlite.Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "postgram.db"))
}

func openAt(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return st
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) driver.Storage { return openStore(t) })
}
