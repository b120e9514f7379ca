package storagetest

import (
	"errors"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
)

// testModelSwitch moves a store to another embedding model the way
// pgm-admin embeddings migrate does: the new model becomes the only active
// one, every entity is re-embedded with it, vector search answers with it,
// and a client configured for the old model is refused.
func testModelSwitch(t *testing.T, open Opener) {
	e := newEnv(t, open)
	a := e.store1(postgram.StoreInput{Content: "pelicans fish in the shallow lagoon"})
	e.store1(postgram.StoreInput{Content: "the quarterly report is due friday"})
	other := e.client(func(c *postgram.Config) { c.Workspace = "other" })
	mustStore(t, other, postgram.StoreInput{Content: "another workspace's note"})
	e.enrich()
	if _, err := adminOf(t, other).EnrichPending(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin().As(postgram.Principal{Scopes: []postgram.Scope{postgram.ScopeRead}}).Admin(); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("a key switched the model: %v", err)
	}
	if _, err := e.admin().SwitchModel(e.ctx, postgram.ModelInfo{Provider: "test", Name: "x", Dimensions: 0}, false); postgram.FieldOf(err) != "dimensions" {
		t.Fatalf("zero dimensions: %v", err)
	}
	next := postgram.ModelInfo{Provider: "test", Name: "deterministic-v1", Dimensions: Dims / 2}
	dry, err := e.admin().SwitchModel(e.ctx, next, true)
	if err != nil || dry.Previous == nil || dry.Previous.Dimensions != Dims || dry.Queued != 0 {
		t.Fatalf("dry run: %v %+v", err, dry)
	}
	if _, m, _, _ := e.store.ActiveModel(e.ctx); m.Dimensions != Dims {
		t.Fatalf("a dry run switched the model to %+v", m)
	}
	res, err := e.admin().SwitchModel(e.ctx, next, false)
	if err != nil || res.Queued != 3 || res.Active.ID == 0 {
		t.Fatalf("switch: %v %+v", err, res)
	}
	ms, err := e.admin().Models(e.ctx)
	if err != nil || len(ms) != 2 || ms[0].Active || !ms[1].Active || ms[1].ModelInfo != next {
		t.Fatalf("models after the switch: %v %+v", err, ms)
	}
	// The old configuration is refused; the new one re-embeds everything.
	if _, err := postgram.New(e.ctx, postgram.Config{Store: e.store, Embedder: e.emb}); !errors.Is(err, postgram.ErrModelMismatch) {
		t.Fatalf("a client with the old model: %v", err)
	}
	emb := postgramtest.NewEmbedder(Dims / 2)
	c2, err := postgram.New(e.ctx, postgram.Config{Store: e.store, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	st, err := adminOf(t, c2).EnrichPending(e.ctx)
	if err != nil || st.Entities != 2 {
		t.Fatalf("re-embedding: %v %+v", err, st)
	}
	r, err := c2.Search(e.ctx, postgram.SearchRequest{Query: "pelicans lagoon"})
	if err != nil || len(r.Results) == 0 || r.Results[0].Entity.ID != a.ID || r.Stats.VectorCandidates == 0 || len(r.Degraded) != 0 {
		t.Fatalf("search with the new model: %v %+v", err, r)
	}
	o2, err := postgram.New(e.ctx, postgram.Config{Store: e.store, Embedder: emb, Workspace: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := adminOf(t, o2).EnrichPending(e.ctx); err != nil || st.Entities != 1 {
		t.Fatalf("the other workspace was not queued: %v %+v", err, st)
	}
	// reembed re-queues with fresh attempts; vectors already made with
	// the active model are kept.
	n, err := adminOf(t, c2).Reembed(e.ctx, []postgram.EntityType{postgram.TypeMemory})
	if err != nil || n != 2 {
		t.Fatalf("reembed: %v %d", err, n)
	}
	if st, err := adminOf(t, c2).EnrichPending(e.ctx); err != nil || st.Entities != 2 || st.Calls != 0 {
		t.Fatalf("after reembed: %v %+v", err, st)
	}
	if _, err := adminOf(t, c2).Reembed(e.ctx, []postgram.EntityType{"nope"}); postgram.FieldOf(err) != "type[0]" {
		t.Fatalf("bad type: %v", err)
	}
}
