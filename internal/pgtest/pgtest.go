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
	"sync"
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

// AppLogin returns dsn with its user replaced by login, a login role that
// is only a member of postgram_app (migration 013's role for servers,
// subject to row-level security). Both roles are created when missing:
// postgram_app as the migration creates it, so a login can be granted it
// before the first migration runs.
func AppLogin(t testing.TB, dsn, login string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("pgtest: parse dsn: %v", err)
	}
	// Once per login and process: concurrent GRANTs of one role fail
	// ("tuple concurrently updated").
	once, _ := logins.LoadOrStore(u.Host+"/"+login, new(sync.Once))
	once.(*sync.Once).Do(func() { createLogin(t, dsn, login) })
	u.User = url.User(login)
	return u.String()
}

// logins remembers the logins AppLogin created.
var logins sync.Map

func createLogin(t testing.TB, dsn, login string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	// Parallel tests may race to create the roles: the loser's error is
	// harmless.
	if _, err := conn.Exec(ctx, `DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'postgram_app') THEN
        CREATE ROLE postgram_app NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '`+login+`') THEN
        CREATE ROLE `+pgx.Identifier{login}.Sanitize()+` LOGIN NOSUPERUSER NOBYPASSRLS;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END
$$`); err != nil {
		t.Fatalf("pgtest: create roles: %v", err)
	}
	if _, err := conn.Exec(ctx, "GRANT postgram_app TO "+pgx.Identifier{login}.Sanitize()); err != nil {
		t.Fatalf("pgtest: grant postgram_app to %s: %v", login, err)
	}
}

// ReplicaEnvVar names a streaming replica of the test cluster
// (scripts/pgtest.sh replica starts one; scripts/test.sh exports it).
const ReplicaEnvVar = "POSTGRAM_TEST_REPLICA_URL"

// Replica returns dsn (a DSN of the test cluster, as Schema returns) with
// its host and port replaced by the replica's, or fails the test when no
// replica is configured.
func Replica(t testing.TB, dsn string) string {
	t.Helper()
	rep := os.Getenv(ReplicaEnvVar)
	if rep == "" {
		t.Fatalf("%s is not set: run the tests with scripts/test.sh (it starts a streaming replica of the test cluster), or run scripts/pgtest.sh replica and export it", ReplicaEnvVar)
	}
	ru, err := url.Parse(rep)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", ReplicaEnvVar, err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("pgtest: parse dsn: %v", err)
	}
	u.Host = ru.Host
	return u.String()
}
