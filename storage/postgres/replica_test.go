package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
)

// TestReadReplicas runs against a real streaming replica of the test
// cluster (scripts/pgtest.sh replica): searches and lists go to the
// replica once it has replayed the writer's writes, a write is findable by
// its writer at once even while the replica's replay is paused (the read
// goes to the primary), and a replica that cannot be reached never fails
// a read.
func TestReadReplicas(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	rdsn := pgtest.Replica(t, dsn)
	st, err := postgres.Open(ctx, postgres.Config{URL: dsn, ReadURLs: []string{rdsn}, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: postgramtest.NewEmbedder(32)})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := pgx.Connect(ctx, rdsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rep.Close(context.Background()) })
	var standby bool
	if err := rep.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&standby); err != nil || !standby {
		t.Fatalf("the replica is not a standby: %v %v", standby, err)
	}
	search := func(q string) []string {
		t.Helper()
		r, err := c.Search(ctx, postgram.SearchRequest{Query: q})
		if err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		var out []string
		for _, x := range r.Results {
			out = append(out, x.Entity.Content)
		}
		return out
	}

	// Read your writes, replica caught up or not.
	if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "the walrus ledger"}); err != nil {
		t.Fatal(err)
	}
	if got := search("walrus ledger"); !slices.Contains(got, "the walrus ledger") {
		t.Fatalf("a write not findable at once: %v", got)
	}
	// Paused replay: the replica cannot have the next write.
	if _, err := rep.Exec(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = rep.Exec(context.Background(), "SELECT pg_wal_replay_resume()") })
	before := st.ReadStats()
	if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "the narwhal ledger"}); err != nil {
		t.Fatal(err)
	}
	if got := search("narwhal ledger"); !slices.Contains(got, "the narwhal ledger") {
		t.Fatalf("a write not findable at once while the replica is paused: %v", got)
	}
	page, err := c.List(ctx, postgram.ListOptions{})
	if err != nil || page.Total != 2 {
		t.Fatalf("list while the replica is paused: %+v %v", page, err)
	}
	mid := st.ReadStats()
	if mid.Primary <= before.Primary || mid.Replica != before.Replica {
		t.Fatalf("reads while the replica lags: %+v -> %+v, want the primary only", before, mid)
	}

	// Resumed: once it has replayed, the replica serves the reads.
	if _, err := rep.Exec(ctx, "SELECT pg_wal_replay_resume()"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		n := st.ReadStats()
		if got := search("narwhal ledger"); !slices.Contains(got, "the narwhal ledger") {
			t.Fatalf("search after resume: %v", got)
		}
		if st.ReadStats().Replica > n.Replica {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica never served a read: %+v", st.ReadStats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var onReplica int
	if err := rep.QueryRow(ctx, "SELECT count(*) FROM entities").Scan(&onReplica); err != nil || onReplica != 2 {
		t.Fatalf("the replica holds %d entities (%v)", onReplica, err)
	}

	// A replica that is down: reads go to the primary, never fail.
	down, err := postgres.Open(ctx, postgres.Config{URL: dsn, ReadURLs: []string{"postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2"}, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { down.Close() })
	dc, err := postgram.New(ctx, postgram.Config{Store: down, Embedder: postgramtest.NewEmbedder(32)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		r, err := dc.Search(ctx, postgram.SearchRequest{Query: "walrus ledger"})
		if err != nil || len(r.Results) == 0 {
			t.Fatalf("search with the replica down: %v %v", r, err)
		}
	}
	if s := down.ReadStats(); s.Replica != 0 || s.Primary == 0 {
		t.Fatalf("reads with the replica down: %+v", s)
	}
}
