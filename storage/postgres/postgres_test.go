package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/storagetest"
)

func open(t *testing.T) driver.Storage {
	t.Helper()
	return openStore(t)
}

func openStore(t *testing.T) *postgres.Store {
	t.Helper()
	return openConfigured(t, postgres.Config{})
}

// openConfigured opens cfg (its URL a fresh schema, 8 connections) and
// migrates it.
func openConfigured(t *testing.T, cfg postgres.Config) *postgres.Store {
	t.Helper()
	ctx := context.Background()
	cfg.URL, cfg.MaxConns = pgtest.Schema(t), 8
	st, err := postgres.Open(ctx, cfg)
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

// TestKeywordPoolWithStatistics runs the keyword-pool conformance check
// after ANALYZE, so the per-term fallback orders terms by the planner's
// statistics and probes only as many as the pool needs.
func TestKeywordPoolWithStatistics(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ctx := context.Background()
	c, err := postgram.New(ctx, postgram.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 230; i++ {
		content := fmt.Sprintf("common filler document %d", i)
		if i < 3 {
			content += " rare"
		}
		if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: fmt.Sprintf("rare standalone %d, rare again and rare once more", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Pool().Exec(ctx, "ANALYZE chunks"); err != nil {
		t.Fatal(err)
	}
	freqs, ok, err := st.TermFrequencies(ctx, "default", []string{"common", "rare", "ABC-1234"})
	if err != nil || !ok {
		t.Fatalf("TermFrequencies: %v %v", ok, err)
	}
	if !(freqs[0] > 0.9 && freqs[1] < freqs[0] && freqs[2] == 0) {
		t.Fatalf("frequencies %v", freqs)
	}
	r, err := c.Search(ctx, postgram.SearchRequest{Query: "common rare", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stats.KeywordProbe != "per_term" || r.Stats.KeywordPool != 200 {
		t.Fatalf("probe %s pool %d", r.Stats.KeywordProbe, r.Stats.KeywordPool)
	}
	rare := 0
	for _, x := range r.Results {
		if strings.Contains(x.ChunkContent, "rare") {
			rare++
		}
	}
	if rare != 5 {
		t.Fatalf("the rarer term's chunks must all be in the pool: got %d of 5", rare)
	}
}

// BenchmarkAuthenticate measures verifying an API key on the hot path:
// parse, digest and the verified-key cache (the change feed is connected,
// as in a running server). Run: go test -run '^$' -bench Authenticate ./storage/postgres
func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	st, err := postgres.Open(ctx, postgres.Config{URL: pgtest.Schema(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st, KeyPepper: []byte("pepper")})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := c.Start(runCtx); err != nil {
		b.Fatal(err)
	}
	defer c.Stop(ctx)
	token, _, err := postgramtest.Admin(b, c).CreateKey(ctx, postgram.KeySpec{Name: "bench", Scopes: postgram.AllScopes})
	if err != nil {
		b.Fatal(err)
	}
	// Wait for the change feed so the cache is in use.
	for i := 0; i < 200; i++ {
		if _, err := postgramtest.Admin(b, c).Authenticate(ctx, token); err != nil {
			b.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := postgramtest.Admin(b, c).Authenticate(ctx, token); err != nil {
			b.Fatal(err)
		}
	}
}
