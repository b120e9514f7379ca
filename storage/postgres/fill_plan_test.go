package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// TestKeywordFillGenericPlan: the keyword fill runs with a generic plan
// (planned once per connection, never per call) inside a transaction of
// its own, and leaves its connection as it found it: no transaction open,
// plan_cache_mode back to the session's (a leaked setting would give every
// later statement on the connection a generic plan).
func TestKeywordFillGenericPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openSmall(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"alpha bravo charlie", "bravo delta", "charlie echo alpha"} {
		createMemory(t, st, text, nil)
	}
	q := driver.KeywordFillQuery{Terms: []string{"alpha", "bravo"}, Order: []int{0, 1}, Limit: 10, Features: true,
		Heads: 4, HeadTerms: []int{0, 1}}
	for i := range 8 { // past the five custom plans PostgreSQL tries in auto mode
		res, err := st.KeywordFill(ctx, "default", q)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != 3 || res.Conjunction != 1 {
			t.Fatalf("call %d: %d hits, %d in the conjunction; want 3 and 1", i, len(res.Hits), res.Conjunction)
		}
	}
	// Every connection of the pool (two) is idle, in auto mode, and its
	// prepared fill has been planned generically only.
	var conns []interface{ Release() }
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	generic := int64(0)
	for range 2 {
		c, err := st.pool.Acquire(withWS(ctx, "default"))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if s := c.Conn().PgConn().TxStatus(); s != 'I' {
			t.Errorf("a connection is left in transaction state %q", s)
		}
		var mode string
		if err := c.QueryRow(ctx, "SHOW plan_cache_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode != "auto" {
			t.Errorf("plan_cache_mode leaked to the session: %q", mode)
		}
		var workers string
		if err := c.QueryRow(ctx, "SHOW max_parallel_workers_per_gather").Scan(&workers); err != nil {
			t.Fatal(err)
		}
		if workers != "0" {
			t.Errorf("max_parallel_workers_per_gather = %s on the store's connections; want 0 (parallel plans cost more than these queries)", workers)
		}
		var g, cu int64
		if err := c.QueryRow(ctx, `SELECT coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0)
			FROM pg_prepared_statements WHERE statement LIKE 'WITH RECURSIVE tq AS%'`).Scan(&g, &cu); err != nil {
			t.Fatal(err)
		}
		if cu != 0 {
			t.Errorf("the fill was planned for %d calls (custom plans); want generic plans only", cu)
		}
		generic += g
	}
	if generic != 8 {
		t.Errorf("%d fills ran generic plans; want all 8", generic)
	}
}

// TestKeywordFillScanSteps: a step over a term in ScanTerms walks the
// workspace's chunks (its branch without the GIN index runs) and fills the
// pool with chunks that match it, as the index's step does; under a narrow
// filter the hint is ignored.
func TestKeywordFillScanSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openSmall(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		text := "alpha filler words"
		switch {
		case i%6 == 0:
			text = "alpha bravo together"
		case i%5 == 0:
			text = "bravo alone here"
		}
		var tags []string
		if i%2 == 0 {
			tags = []string{"even"}
		}
		createMemory(t, st, text, tags)
	}
	// bravo is the rarer term: the conjunction, then bravo's step, then
	// alpha's, which fills the pool.
	base := driver.KeywordFillQuery{Terms: []string{"alpha", "bravo"}, Order: []int{1, 0}, Limit: 30}
	// The walk is the step's second branch, behind a one-time filter on
	// the step's flag: it ran when the node under that filter did.
	walked := func(q driver.KeywordFillQuery) bool {
		plan, err := st.ExplainKeywordFill(ctx, "default", q)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(plan, "\n")
		for i, line := range lines {
			if strings.Contains(line, "One-Time Filter: ('{") && i+1 < len(lines) {
				return !strings.Contains(lines[i+1], "never executed")
			}
		}
		t.Fatalf("no walking branch in the fill's plan:\n%s", plan)
		return false
	}
	for _, tc := range []struct {
		name     string
		scan     []int
		filter   driver.EntityFilter
		wantWalk bool
	}{
		{"index", nil, driver.EntityFilter{}, false},
		{"walk", []int{0}, driver.EntityFilter{}, true},
		{"narrow filter", []int{0}, driver.EntityFilter{Tags: []string{"even"}}, false},
	} {
		q := base
		q.ScanTerms, q.Filter = tc.scan, tc.filter
		if got := walked(q); got != tc.wantWalk {
			t.Errorf("%s: the walk ran %v, want %v", tc.name, got, tc.wantWalk)
		}
		res, err := st.KeywordFill(ctx, "default", q)
		if err != nil {
			t.Fatal(err)
		}
		want := 30 // the room; the 30 even entities all hold a term too
		if len(res.Hits) != want || res.Conjunction != 10 {
			t.Errorf("%s: %d hits, %d in the conjunction; want %d and 10", tc.name, len(res.Hits), res.Conjunction, want)
		}
		seen := map[uuid.UUID]bool{}
		for i, h := range res.Hits {
			if seen[h.ChunkID] {
				t.Errorf("%s: chunk %s twice in the pool", tc.name, h.ChunkID)
			}
			seen[h.ChunkID] = true
			both := strings.Contains(h.Content, "alpha") && strings.Contains(h.Content, "bravo")
			if i < res.Conjunction && !both {
				t.Errorf("%s: conjunction hit %d %q lacks a term", tc.name, i, h.Content)
			}
			if !strings.Contains(h.Content, "alpha") && !strings.Contains(h.Content, "bravo") {
				t.Errorf("%s: hit %q matches no term", tc.name, h.Content)
			}
		}
	}
}

// createMemory stores a one-chunk memory entity holding text.
func createMemory(t *testing.T, st *Store, text string, tags []string) {
	t.Helper()
	now := time.Now().UTC()
	e := &postgram.Entity{ID: uuid.New(), Type: postgram.TypeMemory, Content: text, Tags: tags, Visibility: postgram.VisibilityWork,
		Status: postgram.StatusActive, Version: 1, EnrichmentStatus: postgram.StageSkipped, ExtractionStatus: postgram.StageSkipped,
		CreatedAt: now, UpdatedAt: now}
	if err := st.CreateEntity(context.Background(), "default", e, []driver.ChunkInput{{ID: uuid.New(), Content: text}}, nil); err != nil {
		t.Fatal(err)
	}
}
