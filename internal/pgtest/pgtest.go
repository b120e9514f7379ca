// Package pgtest gives each test its own PostgreSQL schema in the test
// cluster named by POSTGRAM_TEST_DATABASE_URL (scripts/pgtest.sh starts one
// and scripts/test.sh exports it). Tests that need PostgreSQL fail, never
// skip, when it is missing: a green run always includes them.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the test cluster's connection string.
const EnvVar = "POSTGRAM_TEST_DATABASE_URL"

// BaseURL returns the cluster's DSN or fails the test.
func BaseURL(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvVar)
	if dsn == "" {
		t.Fatalf("%s is not set: run the tests with scripts/test.sh (it installs and starts a throwaway PostgreSQL with pgvector), or export it yourself", EnvVar)
	}
	return dsn
}

// Schema creates an empty schema, drops it when the test ends, and returns
// a DSN whose search_path puts it first (then public, where the vector
// extension lives).
func Schema(t testing.TB) string {
	t.Helper()
	base := BaseURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", EnvVar, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS vector"); err != nil {
		t.Fatalf("pgtest: create extension vector: %v", err)
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("pgtest: connect for cleanup: %v", err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", EnvVar, err)
	}
	q := u.Query()
	q.Set("search_path", name+",public")
	u.RawQuery = q.Encode()
	return u.String()
}
