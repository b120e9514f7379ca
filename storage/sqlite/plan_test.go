package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/postgram-go/postgram/driver"
)

// TestQueueClaimsUseTheirIndexes checks the plans of the claim statements:
// each must walk its partial queue index, not every entity of the
// workspace (SQLite uses a partial index only when the WHERE clause states
// the index's predicate).
func TestQueueClaimsUseTheirIndexes(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	for _, tt := range []struct {
		name, sql, index string
		args             []any
	}{
		{"embedding", claimWorkSQL(driver.QueueEmbedding, false), "entities_enrichment_queue", []any{1, "default", 10, 3, 1}},
		{"extraction", claimWorkSQL(driver.QueueExtraction, true), "entities_extraction_queue", []any{1, "default", 10, 3, 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := st.w.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+tt.sql, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			text := strings.Join(plan, "\n")
			if !strings.Contains(text, "USING INDEX "+tt.index) {
				t.Errorf("claim does not use %s; plan:\n%s", tt.index, text)
			}
		})
	}
}
