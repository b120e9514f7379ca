package storagetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// testFilterOneDefinition checks that the backend renders every rule of
// driver.EntityFilter (its Conds) exactly as the Go matcher evaluates it:
// for random filters over entities of every kind, ListEntities and the
// vector branch (SQL, or SQLite's in-memory index) admit the same entities
// as driver.Matcher.
func testFilterOneDefinition(t *testing.T, open Opener) {
	e := newEnv(t, open)
	r := rand.New(rand.NewPCG(7, 11))
	types := []postgram.EntityType{postgram.TypeMemory, postgram.TypeDocument, postgram.TypeTask}
	vis := []postgram.Visibility{postgram.VisibilityShared, postgram.VisibilityWork, postgram.VisibilityPersonal}
	owners := []string{"", "ana", "bo", driver.OwnerShared}
	tagSets := [][]string{nil, {"red"}, {"red", "blue"}, {"blue"}}
	agents := []*postgram.Client{agent(e.c, "client-a"), agent(e.c, "client-b")}

	var all []*postgram.Entity
	for i := range 36 {
		var ent *postgram.Entity
		switch i % 6 {
		case 0, 1: // session context of one client or the other
			sc, err := agents[i%2].StoreSessionContext(e.ctx, postgram.SessionContextInput{
				Content: fmt.Sprintf("session note %d about filters", i), Tags: tagSets[r.IntN(len(tagSets))]})
			if err != nil {
				t.Fatal(err)
			}
			ent = sc
		default:
			typ := types[r.IntN(len(types))]
			in := postgram.StoreInput{Type: typ, Content: fmt.Sprintf("note %d about filters", i),
				Visibility: vis[r.IntN(len(vis))], Owner: owners[r.IntN(len(owners))], Tags: tagSets[r.IntN(len(tagSets))]}
			if typ == postgram.TypeMemory && r.IntN(2) == 0 {
				in.Metadata = map[string]any{"memory_role": string(postgram.RoleDurableMemory)}
			}
			ent = e.store1(in)
		}
		if r.IntN(4) == 0 {
			if _, err := e.c.Delete(e.ctx, ent.ID); err != nil { // archives it
				t.Fatal(err)
			}
		}
		all = append(all, ent)
	}
	e.enrich()
	ids := make([]uuid.UUID, len(all))
	for i, x := range all {
		ids[i] = x.ID
	}
	stored, err := e.store.GetEntities(e.ctx, postgram.DefaultWorkspace, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(all) {
		t.Fatalf("GetEntities returned %d of %d", len(stored), len(all))
	}
	mid := stored[len(stored)/2].UpdatedAt
	modelID, _, ok, err := e.store.ActiveModel(e.ctx)
	if err != nil || !ok {
		t.Fatalf("active model: %v %v", ok, err)
	}
	qv, err := e.emb.EmbedBatch(e.ctx, []string{"filters"})
	if err != nil {
		t.Fatal(err)
	}

	pick := func(n int, from func(int) string) []string {
		var out []string
		for range n {
			if v := from(r.IntN(8)); v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		return out
	}
	for round := range 60 {
		var f driver.EntityFilter
		if r.IntN(2) == 0 {
			for _, s := range pick(2, func(i int) string { return string(append(types, postgram.TypeProject)[i%4]) }) {
				f.Types = append(f.Types, postgram.EntityType(s))
			}
		}
		if r.IntN(3) == 0 {
			f.Statuses = []postgram.Status{[]postgram.Status{postgram.StatusActive, postgram.StatusArchived, postgram.StatusInbox}[r.IntN(3)]}
		}
		f.IncludeArchived = r.IntN(3) == 0
		if r.IntN(2) == 0 {
			for _, s := range pick(2, func(i int) string { return string(vis[i%3]) }) {
				f.Visibilities = append(f.Visibilities, postgram.Visibility(s))
			}
		}
		if r.IntN(3) == 0 {
			f.Owner = owners[1+r.IntN(3)]
		}
		if r.IntN(3) == 0 {
			f.Tags = tagSets[1+r.IntN(3)]
		}
		if r.IntN(4) == 0 {
			f.MemoryRole = []postgram.MemoryRole{postgram.RoleDurableMemory, postgram.RoleSessionContext}[r.IntN(2)]
		}
		if r.IntN(2) == 0 {
			f.ClientScoped, f.ClientID = true, []string{"client-a", "client-b", ""}[r.IntN(3)]
		}
		switch r.IntN(4) {
		case 0:
			f.UpdatedBefore = mid
		case 1:
			f.UpdatedAfter = mid
		case 2:
			f.UpdatedAfter = mid.Add(-time.Hour)
		}

		m := f.Matcher()
		var want []uuid.UUID
		for _, x := range stored {
			v := driver.ViewOf(x)
			if m.Admits(&v) {
				want = append(want, x.ID)
			}
		}
		slices.SortFunc(want, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })

		listed, total, err := e.store.ListEntities(e.ctx, postgram.DefaultWorkspace, f, 100, 0, 0)
		if err != nil {
			t.Fatalf("round %d: ListEntities(%+v): %v", round, f, err)
		}
		var got []uuid.UUID
		for _, x := range listed {
			got = append(got, x.ID)
		}
		slices.SortFunc(got, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
		if d := cmp.Diff(want, got); d != "" || total != len(want) {
			t.Fatalf("round %d: filter %+v: ListEntities (total %d) differs from the matcher (-matcher +store):\n%s", round, f, total, d)
		}

		// The vector branch reads the same rules (SQLite: its in-memory
		// index; PostgreSQL: SQL around the HNSW or exact scan).
		res, err := e.store.VectorSearch(e.ctx, postgram.DefaultWorkspace, driver.VectorQuery{Filter: f, ModelID: modelID,
			Vector: qv[0], Limit: 200, Strategy: postgram.StrategyExact})
		if err != nil {
			t.Fatalf("round %d: VectorSearch: %v", round, err)
		}
		seen := map[uuid.UUID]bool{}
		for _, h := range res.Hits {
			seen[h.EntityID] = true
		}
		var vgot []uuid.UUID
		for id := range seen {
			vgot = append(vgot, id)
		}
		slices.SortFunc(vgot, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
		if d := cmp.Diff(want, vgot); d != "" {
			t.Fatalf("round %d: filter %+v: VectorSearch differs from the matcher (-matcher +store):\n%s", round, f, d)
		}
	}
}

// testEntityVectors covers the vectors behind the embedding map: one per
// embedded entity the filter admits, newest first, at most limit.
func testEntityVectors(t *testing.T, open Opener) {
	e := newEnv(t, open)
	a := e.store1(postgram.StoreInput{Type: postgram.TypeMemory, Content: "first note about maps"})
	b := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: "second note about maps"})
	e.store1(postgram.StoreInput{Type: postgram.TypeMemory, Content: "third note about maps"})
	id, _, ok, err := e.store.ActiveModel(e.ctx)
	if err != nil || !ok {
		t.Fatalf("active model: %v %v", ok, err)
	}
	if vs, err := e.store.EntityVectors(e.ctx, postgram.DefaultWorkspace, id, driver.EntityFilter{}, 10); err != nil || len(vs) != 0 {
		t.Fatalf("before enrichment: %d vectors, %v", len(vs), err)
	}
	e.enrich()
	vs, err := e.store.EntityVectors(e.ctx, postgram.DefaultWorkspace, id, driver.EntityFilter{}, 10)
	if err != nil || len(vs) != 3 || len(vs[0].Vector) != Dims {
		t.Fatalf("EntityVectors: %d vectors, %v", len(vs), err)
	}
	vs, _ = e.store.EntityVectors(e.ctx, postgram.DefaultWorkspace, id, driver.EntityFilter{Types: []postgram.EntityType{postgram.TypeDocument}}, 10)
	if len(vs) != 1 || vs[0].EntityID != b.ID {
		t.Fatalf("filtered by type: %v", vs)
	}
	if vs, _ = e.store.EntityVectors(e.ctx, postgram.DefaultWorkspace, id, driver.EntityFilter{}, 2); len(vs) != 2 {
		t.Fatalf("limit 2: %d", len(vs))
	}
	if _, err := e.c.Delete(e.ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	vs, _ = e.store.EntityVectors(e.ctx, postgram.DefaultWorkspace, id, driver.EntityFilter{}, 10)
	for _, v := range vs {
		if v.EntityID == a.ID {
			t.Fatal("an archived entity is on the map")
		}
	}
	if _, err := e.store.EntityVectors(e.ctx, "other", id, driver.EntityFilter{}, 10); err != nil {
		t.Fatal(err)
	}
}
