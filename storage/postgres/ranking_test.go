package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// TestLexemeStatsExact: the statistics ranking v2 reads equal a recount of
// the chunks after every kind of change (the library's writes, SQL updates
// and deletes, a truncate), before and after folding, and a fold changes
// nothing a reader sees.
func TestLexemeStatsExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openSmall(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	lexemes := []string{"alpha", "bravo", "charlie", "delta", "it's", "abc-1234", "nothing"}
	recount := func(ws string) driver.LexemeStats {
		t.Helper()
		want := driver.LexemeStats{DF: map[string]int64{}}
		if err := st.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum((SELECT sum(cardinality(u.positions)) FROM unnest(c.tsv) u)), 0)
			FROM chunks c WHERE c.workspace_id = $1`, ws).Scan(&want.Chunks, &want.Length); err != nil {
			t.Fatal(err)
		}
		for _, l := range lexemes {
			var n int64
			if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM chunks c WHERE c.workspace_id = $1 AND c.tsv @@ $2::tsquery`,
				ws, alternativesQuery([]string{l})).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				want.DF[l] = n
			}
		}
		return want
	}
	check := func(step string) {
		t.Helper()
		for _, ws := range []string{"a", "b"} {
			got, err := st.LexemeStats(ctx, ws, lexemes)
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			if d := cmp.Diff(recount(ws), got); d != "" {
				t.Fatalf("%s, workspace %s (-recount +LexemeStats):\n%s", step, ws, d)
			}
		}
	}
	now := time.Now().UTC()
	put := func(ws string, chunks ...string) uuid.UUID {
		t.Helper()
		e := &postgram.Entity{ID: uuid.New(), Type: postgram.TypeMemory, Content: chunks[0], Visibility: postgram.VisibilityWork,
			Status: postgram.StatusActive, Version: 1, EnrichmentStatus: postgram.StageSkipped, ExtractionStatus: postgram.StageSkipped,
			CreatedAt: now, UpdatedAt: now}
		var in []driver.ChunkInput
		for i, c := range chunks {
			in = append(in, driver.ChunkInput{ID: uuid.New(), Index: i, Content: c})
		}
		if err := st.CreateEntity(ctx, ws, e, in, nil); err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	check("empty")
	a1 := put("a", "alpha bravo alpha", "charlie it's")
	put("a", "alpha ABC-1234 delta")
	put("b", "bravo bravo bravo")
	check("after creates")
	if _, err := st.FoldStats(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a fold")
	e, err := st.GetEntity(ctx, "a", a1)
	if err != nil {
		t.Fatal(err)
	}
	e.Content, e.Version = "delta delta", 2
	if err := st.UpdateEntity(ctx, "a", e, 1, []driver.ChunkInput{{ID: uuid.New(), Content: "delta delta"}}, nil); err != nil {
		t.Fatal(err)
	}
	check("after a rechunk")
	for i, sql := range []string{
		`UPDATE chunks SET content = 'bravo charlie charlie' WHERE workspace_id = 'b'`,
		`UPDATE chunks SET embedding = NULL WHERE workspace_id = 'a'`,
		`DELETE FROM entities WHERE workspace_id = 'a' AND id = '` + a1.String() + `'`,
	} {
		if _, err := st.pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("after SQL %d", i))
		if i == 1 {
			if _, err := st.FoldStats(ctx); err != nil {
				t.Fatal(err)
			}
			check("after a second fold")
		}
	}
	for i := range foldMinRows + 5 {
		put("a", fmt.Sprintf("alpha number%d", i))
	}
	check("many pending rows")
	if _, err := st.pool.Exec(ctx, `TRUNCATE chunks`); err != nil {
		t.Fatal(err)
	}
	check("after truncate")
	if _, err := st.FoldStats(ctx); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := st.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM lexeme_stats WHERE lexeme <> '') + (SELECT count(*) FROM lexeme_stats_delta)`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Fatalf("%d statistics rows left for no chunks", rows)
	}
}

// TestHeadsFilledAtMigrate: entities written without a head (before
// migration 011, or by SQL) get one when the store migrates, and are then
// found by a name only their metadata holds.
func TestHeadsFilledAtMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openSmall(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypePerson, Content: "Joined in spring; works on billing",
		Metadata: map[string]any{"name": "Dana Whitfield"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE entities SET head = NULL`); err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var head string
	if err := st.pool.QueryRow(ctx, `SELECT head::text FROM entities WHERE id = $1`, e.ID).Scan(&head); err != nil {
		t.Fatal(err)
	}
	if head != `'dana':1 'whitfield':2` { // the metadata name is the head
		t.Fatalf("head = %s", head)
	}
	r, err := c.Search(ctx, postgram.SearchRequest{Query: "whitfield"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Results) == 0 || r.Results[0].Entity.ID != e.ID {
		t.Fatalf("search by a metadata name: %+v", r.Results)
	}
}
