package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/driver"
)

// TestQueueClaimsNeedNoSort: a claim reads its queue's index in the
// claim's order (queued_at NULLS FIRST, id) and sorts nothing, so its cost
// does not grow with the queue (a sort of every pending row cost 133 ms
// per claim at 300,000). With sorting priced out, a plan that still sorts
// means the index cannot give the order.
func TestQueueClaimsNeedNoSort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openSmall(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		q     driver.Queue
		after bool
		index string
	}{{driver.QueueEmbedding, false, "entities_enrichment_queue"}, {driver.QueueExtraction, true, "entities_extraction_queue"}} {
		var plan []string
		err := pgx.BeginFunc(withWS(ctx, "default"), st.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL enable_sort = off; SET LOCAL enable_seqscan = off"); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, "EXPLAIN "+claimWorkSQL(tt.q, tt.after), "default", 32, 4, 60.0)
			if err != nil {
				return err
			}
			plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, tt.index) || strings.Contains(text, "Sort") {
			t.Errorf("%s claim: want %s read in order and no sort; plan:\n%s", tt.q, tt.index, text)
		}
	}
}

// TestEventNumberingByAddress: numbering a workspace's pending events
// updates the rows it found by their addresses (TID scans), so its cost is
// the pending events', whatever the planner believes of the table. Joined
// by id instead, a table whose statistics said it was nearly empty (a new
// workspace's first bulk import) was scanned whole once per pending event:
// 50,000–137,000 buffer reads and 51–134 ms per numbering while other
// writers queued on its lock.
func TestEventNumberingByAddress(t *testing.T) {
	t.Parallel()
	ctx := withWS(context.Background(), "default")
	st := openSmall(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Statistics that say nothing: autovacuum stays away from this
	// schema's events, which get 2,000 numbered rows and 40 pending ones.
	if _, err := st.pool.Exec(ctx, `ALTER TABLE events SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `INSERT INTO events (workspace_id, seq, kind, created_at)
		SELECT 'default', CASE WHEN g <= 2000 THEN g END, 'entity.created', now() FROM generate_series(1, 2040) g`); err != nil {
		t.Fatal(err)
	}
	var plan []string
	var numbered int64
	err := pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF) "+numberSQL, "default", "postgram_test_numbering", "x")
		if err != nil {
			return err
		}
		if plan, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM events WHERE workspace_id = 'default' AND seq > 2000`).Scan(&numbered)
	})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if numbered != 40 {
		t.Errorf("numbered %d events, want the 40 pending; plan:\n%s", numbered, text)
	}
	if !strings.Contains(text, "Tid Scan on events e") || strings.Contains(text, "Join Filter") {
		t.Errorf("want the pending rows updated by address (a Tid Scan, no join filter); plan:\n%s", text)
	}
}
