package postgres_test

import (
	"context"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/storagetest"
)

func open(t *testing.T) postgram.Storage {
	t.Helper()
	return openStore(t)
}

func openStore(t *testing.T) *postgres.Store {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, postgres.Config{URL: pgtest.Schema(t), MaxConns: 8})
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
	storagetest.Run(t, open)
}

func TestMigrateIdempotent(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if err := st.Migrate(ctx); err != nil {
			t.Fatalf("migrate again: %v", err)
		}
	}
	cur, latest, err := st.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cur != latest || cur < 1 {
		t.Fatalf("schema version %d of %d", cur, latest)
	}
}
