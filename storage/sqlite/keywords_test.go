package sqlite

import (
	"math/rand/v2"
	"testing"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/kwindex"
)

// TestAdmittedMasksFollowEntityChanges checks that the cached filter masks,
// updated per changed entity, always equal a fresh evaluation.
func TestAdmittedMasksFollowEntityChanges(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	ix := &index{spaces: map[string]*space{}, entLoc: map[int64]entLoc{}}
	types := []postgram.EntityType{postgram.TypeMemory, postgram.TypeTask, postgram.TypeDocument}
	filters := []driver.EntityFilter{
		{},
		{Types: []postgram.EntityType{postgram.TypeTask}},
		{Tags: []string{"a"}, IncludeArchived: true},
		{Statuses: []postgram.Status{postgram.StatusArchived}},
		{Visibilities: []postgram.Visibility{postgram.VisibilityPersonal}, Owner: "ana"},
	}
	randomEntity := func(rid int64) entAttr {
		a := entAttr{live: true, rid: rid, Entity: kwindex.Entity{ID: uuid.New(), FilterView: driver.FilterView{Type: types[r.IntN(len(types))], Status: postgram.StatusActive,
			Visibility: postgram.VisibilityWork, UpdatedAt: int64(r.IntN(1000))}}}
		if r.IntN(3) == 0 {
			a.Status = postgram.StatusArchived
		}
		if r.IntN(2) == 0 {
			a.Visibility, a.Owner = postgram.VisibilityPersonal, "ana"
		}
		if r.IntN(2) == 0 {
			a.Tags = []string{"a"}
		}
		return a
	}
	for rid := range int64(50) {
		ix.putEntity("w", randomEntity(rid))
	}
	sp := ix.spaces["w"]
	for round := range 300 {
		for i := range filters[:3] { // the cache holds four; use some
			sp.admitted(&filters[(round+i)%len(filters)])
		}
		switch rid := int64(r.IntN(70)); r.IntN(3) {
		case 0:
			ix.dropEntity(rid)
		case 1: // an update keeps the entity's id
			if loc, ok := ix.entLoc[rid]; ok {
				a := randomEntity(rid)
				a.ID = loc.sp.ents[loc.slot].ID
				ix.putEntity("w", a)
			}
		default:
			ix.putEntity("w", randomEntity(rid))
		}
		for i := range filters {
			got := sp.admitted(&filters[i])
			for slot := range sp.ents {
				if want := admits(filters[i].Matcher(), &sp.ents[slot]); got[slot] != want {
					t.Fatalf("round %d, filter %d, slot %d: cached %v, evaluated %v", round, i, slot, got[slot], want)
				}
			}
		}
	}
}
