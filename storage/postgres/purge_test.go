package postgres_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/storagetest"
)

// rowsHolding counts, per table of the store's schema, the rows whose text
// form holds s.
func rowsHolding(t *testing.T, st *postgres.Store, s string) map[string]int {
	t.Helper()
	ctx := context.Background()
	rows, err := st.Pool().Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, tb := range tables {
		var n int
		q := `SELECT count(*) FROM ` + pgx.Identifier{tb}.Sanitize() + ` t WHERE strpos(t::text, $1) > 0`
		if err := st.Pool().QueryRow(ctx, q, s).Scan(&n); err != nil {
			t.Fatalf("%s: %v", tb, err)
		}
		if n > 0 {
			out[tb] = n
		}
	}
	return out
}

// TestPurgeLeavesNoTrace purges a document whose content held a unique
// word and checks that no row of any table of the store holds it (the
// statistics included).
func TestPurgeLeavesNoTrace(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ctx := t.Context()
	c, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: postgramtest.NewEmbedder(storagetest.Dims)})
	if err != nil {
		t.Fatal(err)
	}
	id := storagetest.PurgeFixture(t, c)
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FoldStats(ctx); err != nil {
		t.Fatal(err)
	}
	// A pending statistics row as well as folded ones.
	if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "more about " + storagetest.PurgeCanary + " here"}); err != nil {
		t.Fatal(err)
	}
	held := rowsHolding(t, st, storagetest.PurgeCanary)
	if held["entities"] == 0 || held["chunks"] == 0 || held["lexeme_stats"] == 0 {
		t.Fatalf("before the purge the canary is in %v: the test proves nothing", held)
	}
	res, err := postgramtest.Admin(t, c).Purge(ctx, postgram.PurgeRequest{Type: postgram.TypeMemory})
	if err != nil || res.Entities != 1 {
		t.Fatalf("purge memories: %+v %v", res, err)
	}
	res, err = postgramtest.Admin(t, c).Purge(ctx, postgram.PurgeRequest{IDs: []uuid.UUID{id}})
	if err != nil || res.Entities != 1 || !res.Scrubbed {
		t.Fatalf("purge: %+v %v", res, err)
	}
	if held := rowsHolding(t, st, storagetest.PurgeCanary); len(held) != 0 {
		t.Fatalf("after the purge rows hold the content: %v", held)
	}
	if r, err := c.Search(ctx, postgram.SearchRequest{Query: storagetest.PurgeCanary}); err != nil || len(r.Results) != 0 {
		t.Fatalf("the purged content is still found: %+v %v", r, err)
	}
}
