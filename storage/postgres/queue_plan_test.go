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
