package storagetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/query"
)

// testSearchWorstQuery runs searches with 32 KiB queries (the longest a
// search accepts) built to make PostgreSQL's text-search parser backtrack.
// Each term is cut before any parser sees it, on both backends, so the
// search answers quickly and finds the document holding the cut term.
func testSearchWorstQuery(t *testing.T, open Opener) {
	e := newEnv(t, open)
	e.emb.Fail(errors.New("keyword-only test"))
	long := func(pat string) string { return strings.Repeat(pat, postgram.MaxQueryBytes/len(pat)) }
	for _, tc := range []struct {
		name, query string
	}{
		{"the issue's query", long("1-a-")},
		{"underscores", long("a_")},
		{"non-ASCII", long("1-é-")},
	} {
		start := time.Now()
		r := e.search(postgram.SearchRequest{Query: tc.query})
		took := time.Since(start)
		t.Logf("%s: %d-byte query searched in %v", tc.name, len(tc.query), took)
		if len(r.Stats.Terms) != 1 {
			t.Fatalf("%s: terms %d, want 1", tc.name, len(r.Stats.Terms))
		}
		term := r.Stats.Terms[0]
		if len(term) > query.MaxTermBytes || !strings.HasPrefix(tc.query, term) || !utf8.ValidString(term) {
			t.Fatalf("%s: kept a %d-byte term %.40q…, want a prefix of the query of at most %d bytes",
				tc.name, len(term), term, query.MaxTermBytes)
		}
		// A document holding the term as the search keeps it is found.
		ent := e.store1(postgram.StoreInput{Content: "before " + term + " after"})
		r = e.search(postgram.SearchRequest{Query: tc.query})
		if !has(ids(r), ent.ID) {
			t.Fatalf("%s: the document holding the cut term was not found: %v", tc.name, ids(r))
		}
	}
	// Many long terms: only the first 24 are kept, each cut.
	var b strings.Builder
	for i := 0; b.Len() < postgram.MaxQueryBytes-2*query.MaxTermBytes; i++ {
		fmt.Fprintf(&b, "%d%s ", i, strings.Repeat("-a-1", query.MaxTermBytes/4))
	}
	start := time.Now()
	r := e.search(postgram.SearchRequest{Query: b.String()})
	t.Logf("many long terms: %d-byte query searched in %v", b.Len(), time.Since(start))
	if len(r.Stats.Terms) != query.MaxTerms {
		t.Fatalf("many long terms: kept %d terms, want %d", len(r.Stats.Terms), query.MaxTerms)
	}
	for _, term := range r.Stats.Terms {
		if len(term) > query.MaxTermBytes {
			t.Fatalf("many long terms: kept a %d-byte term", len(term))
		}
	}
}

// testWriteRacesEnrichment updates entities' content (which replaces their
// chunks) while workers embed them: the write and the worker's recording
// of embeddings touch the same entity and chunk rows. Neither side may
// fail (on PostgreSQL a lock-order inversion between them showed up as
// "deadlock detected", a 500 to the writer), and every entity ends up
// embedded for its final content.
func testWriteRacesEnrichment(t *testing.T, open Opener) {
	const (
		entities = 6
		updaters = 3
		workers  = 2
		updates  = 2000 // in all, at most
		least    = 60   // in all, at least
		budget   = 4 * time.Second
	)
	e := newEnv(t, open, func(c *postgram.Config) {
		// Several chunks per entity, so recording embeddings updates
		// several chunk rows, and small claims, so workers interleave.
		c.Chunking.Size, c.Chunking.Overlap = 60, -1
		c.Worker.ClaimBatch = 2
	})
	content := func(id, round int) string {
		var b strings.Builder
		for k := range 5 {
			fmt.Fprintf(&b, "Entity %d round %d part %d: the quick brown fox jumps over the lazy dog. ", id, round, k)
		}
		return b.String()
	}
	ents := make([]*postgram.Entity, entities)
	for i := range ents {
		ents[i] = e.store1(postgram.StoreInput{Content: content(i, 0)})
	}

	var (
		done     atomic.Bool
		nUpdates atomic.Int64 // updates started
		made     atomic.Int64 // updates made
		embedded atomic.Int64
		errs     = make(chan error, 16)
	)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		c := e.c
		if w%2 == 1 {
			c = e.client(func(c *postgram.Config) { c.Chunking.Size, c.Chunking.Overlap = 60, -1; c.Worker.ClaimBatch = 2 })
		}
		wg.Go(func() {
			for !done.Load() {
				st, err := adminOf(t, c).EnrichPending(e.ctx)
				if err != nil {
					fail(fmt.Errorf("worker %d: %w", w, err))
					return
				}
				embedded.Add(int64(st.Entities))
				if st.Entities == 0 {
					time.Sleep(100 * time.Microsecond)
				}
			}
		})
	}
	// The budget keeps the run short under the race detector or a loaded
	// machine (past it, only the least number of updates is completed);
	// without them the updates run out first.
	deadline := time.Now().Add(budget)
	var uwg sync.WaitGroup
	for u := range updaters {
		uwg.Go(func() {
			// Each updater owns its entities, so versions never conflict.
			for round := 1; ; round++ {
				for i := u; i < entities; i += updaters {
					n := nUpdates.Add(1)
					if n > updates || n > least && time.Now().After(deadline) {
						return
					}
					next := content(i, round)
					in := postgram.UpdateInput{Version: ents[i].Version, Content: &next}
					if round%10 == 0 {
						in.Tags = &[]string{fmt.Sprintf("round-%d", round)}
					}
					got, err := e.c.Update(e.ctx, ents[i].ID, in)
					if err != nil {
						fail(fmt.Errorf("update %d round %d: %w", i, round, err))
						return
					}
					ents[i] = got
					made.Add(1)
				}
			}
		})
	}
	uwg.Wait()
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	t.Logf("%d updates raced %d embeddings of the same %d entities", made.Load(), embedded.Load(), entities)
	if embedded.Load() == 0 {
		t.Fatal("the workers embedded nothing while the updates ran")
	}
	// Settle: every entity is embedded for its last content.
	e.enrich()
	for _, ent := range ents {
		back, err := e.c.Recall(e.ctx, ent.ID)
		if err != nil {
			t.Fatal(err)
		}
		if back.Content != ent.Content || back.EnrichmentStatus != postgram.StageCompleted {
			t.Fatalf("entity %s: enrichment %s, content current %v", ent.ID, back.EnrichmentStatus, back.Content == ent.Content)
		}
	}
}
