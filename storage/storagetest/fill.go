package storagetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// testKeywordFill checks a KeywordFiller's one-call pool against the steps
// it replaces, computed from uncapped per-term probes: the whole
// conjunction first, then each term's remaining chunks in order, the step
// that overflows contributing exactly the room left (any subset), and only
// chunks the filter admits.
func testKeywordFill(t *testing.T, open Opener) {
	e := newEnv(t, open)
	st, ok := e.store.(driver.KeywordFiller)
	if !ok {
		t.Skip("the store builds the keyword pool probe by probe (no KeywordFiller)")
	}
	ctx, c := e.ctx, e.c
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "abc-12"}
	rng := rand.New(rand.NewPCG(7, 9))
	var archive []string
	for i := 0; i < 400; i++ {
		content := fmt.Sprintf("doc %d", i)
		for j, w := range words {
			// alpha is in most documents, abc-12 in few.
			if rng.IntN(100) < 80-j*14 {
				content += " " + w
			}
		}
		typ := postgram.TypeMemory
		if i%5 == 0 {
			typ = postgram.TypeDocument
		}
		e, err := c.Store(ctx, postgram.StoreInput{Type: typ, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			archive = append(archive, e.ID.String())
		}
	}
	if _, err := c.BulkArchive(ctx, archive); err != nil {
		t.Fatal(err)
	}
	filters := map[string]driver.EntityFilter{
		"active":    {},
		"documents": {Types: []postgram.EntityType{postgram.TypeDocument}},
		"archived":  {IncludeArchived: true},
	}
	queries := [][]string{
		{"alpha", "bravo"},
		{"echo", "abc-12"},
		{"abc-12", "delta", "alpha"},
		{"charlie", "delta", "echo", "abc-12"},
		{"alpha", "nothing"},
		{"nothing", "never"},
		// Joined with a space these two read as an XML tag, which the
		// parser drops: the conjunction is the AND of the terms.
		{"<alpha", "bravo>"},
	}
	for name, f := range filters {
		for _, terms := range queries {
			for _, limit := range []int{200, 30} {
				order := rng.Perm(len(terms))
				t.Run(fmt.Sprintf("%s/%v/%v/%d", name, terms, order, limit), func(t *testing.T) {
					set := func(mode driver.ProbeMode, term int) map[uuid.UUID]bool {
						hs, err := e.store.KeywordProbe(ctx, postgram.DefaultWorkspace, driver.KeywordQuery{Filter: f, Terms: terms, Mode: mode, Term: term, Limit: 10000, Bare: true})
						if err != nil {
							t.Fatal(err)
						}
						m := map[uuid.UUID]bool{}
						for _, h := range hs {
							m[h.ChunkID] = true
						}
						return m
					}
					res, err := st.KeywordFill(ctx, postgram.DefaultWorkspace, driver.KeywordFillQuery{Filter: f, Terms: terms, Order: order, Limit: limit})
					if err != nil {
						t.Fatal(err)
					}
					got := map[uuid.UUID]bool{}
					for i, h := range res.Hits {
						if got[h.ChunkID] {
							t.Fatalf("chunk %s twice", h.ChunkID)
						}
						got[h.ChunkID] = true
						if i < res.Conjunction && h.Matched != 1<<len(terms)-1 {
							t.Fatalf("conjunction hit %d matches terms %b", i, h.Matched)
						}
						if h.Rank <= 0 || h.Content == "" || h.UpdatedAt.IsZero() {
							t.Fatalf("hit not scored: %+v", h)
						}
					}
					conj := set(driver.ProbeAll, 0)
					if want := min(limit, len(conj)); res.Conjunction != want {
						t.Fatalf("conjunction hits %d, want %d", res.Conjunction, want)
					}
					prev := map[uuid.UUID]bool{}
					for id := range conj {
						if len(conj) <= limit || got[id] {
							prev[id] = true
						}
					}
					full := len(prev) >= limit
					for _, term := range order {
						if full {
							break
						}
						var avail []uuid.UUID
						for id := range set(driver.ProbeTerm, term) {
							if !prev[id] {
								avail = append(avail, id)
							}
						}
						if len(prev)+len(avail) <= limit {
							for _, id := range avail {
								if !got[id] {
									t.Fatalf("term %q: chunk %s missing", terms[term], id)
								}
								prev[id] = true
							}
							continue
						}
						taken := 0
						for _, id := range avail {
							if got[id] {
								taken++
								prev[id] = true
							}
						}
						if taken != limit-(len(prev)-taken) {
							t.Fatalf("term %q overflows: took %d, room %d", terms[term], taken, limit-(len(prev)-taken))
						}
						full = true
					}
					for id := range got {
						if !prev[id] {
							t.Fatalf("chunk %s is in no step", id)
						}
					}
					if len(got) != len(prev) {
						t.Fatalf("pool %d, steps %d", len(got), len(prev))
					}
				})
			}
		}
	}
}

// testVectorAlso: the similarities VectorSearch answers for VectorQuery.Also
// are the ones ChunkSimilarities gives, for every plan; chunks without an
// embedding and unknown ids are absent.
func testVectorAlso(t *testing.T, open Opener) {
	e := newEnv(t, open)
	scorer, ok := e.store.(driver.SimilarityScorer)
	if !ok {
		t.Skip("the store computes similarities with its keyword hits (no SimilarityScorer)")
	}
	var chunks []uuid.UUID
	for i := 0; i < 30; i++ {
		tags := []string{"bulk"}
		if i%10 == 0 {
			tags = []string{"narrow"}
		}
		ent := e.store1(postgram.StoreInput{Content: fmt.Sprintf("similarity sample %d on topic %d", i, i%4), Tags: tags})
		hs, err := e.store.KeywordProbe(e.ctx, postgram.DefaultWorkspace, driver.KeywordQuery{
			Terms: []string{fmt.Sprintf("%d", i)}, Mode: driver.ProbeAll, Limit: 10, Bare: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			if h.EntityID == ent.ID {
				chunks = append(chunks, h.ChunkID)
			}
		}
	}
	e.enrich()
	// A chunk stored after enrichment has no embedding yet.
	late := e.store1(postgram.StoreInput{Content: "similarity latecomer without an embedding"})
	hs, err := e.store.KeywordProbe(e.ctx, postgram.DefaultWorkspace, driver.KeywordQuery{
		Terms: []string{"latecomer"}, Mode: driver.ProbeAll, Limit: 10, Bare: true})
	if err != nil || len(hs) != 1 || hs[0].EntityID != late.ID {
		t.Fatalf("latecomer probe: %v %v", hs, err)
	}
	also := append(append([]uuid.UUID{}, chunks...), hs[0].ChunkID, uuid.New())
	id, _, ok, err := e.store.ActiveModel(e.ctx)
	if err != nil || !ok {
		t.Fatalf("active model: %v %v", ok, err)
	}
	vec, err := e.emb.EmbedBatch(e.ctx, []string{"similarity on topic 2"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := scorer.ChunkSimilarities(e.ctx, postgram.DefaultWorkspace, id, vec[0], also)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(chunks) {
		t.Fatalf("ChunkSimilarities: %d of %d embedded chunks", len(want), len(chunks))
	}
	for _, f := range []driver.EntityFilter{{}, {Tags: []string{"narrow"}}} {
		for _, s := range []postgram.Strategy{postgram.StrategyExact, postgram.StrategyHNSW, postgram.StrategyAuto} {
			r, err := e.store.VectorSearch(e.ctx, postgram.DefaultWorkspace, driver.VectorQuery{
				Filter: f, ModelID: id, Vector: vec[0], Limit: 10, Strategy: s, Also: also})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Similarities) != len(want) {
				t.Fatalf("%v %s (%s): %d similarities, want %d", f.Tags, s, r.Plan, len(r.Similarities), len(want))
			}
			for id, w := range want {
				if g, ok := r.Similarities[id]; !ok || math.Abs(g-w) > 1e-9 {
					t.Fatalf("%v %s (%s): chunk %s similarity %v, ChunkSimilarities %v", f.Tags, s, r.Plan, id, g, w)
				}
			}
		}
	}
}
