package kwindex

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/postgram-go/postgram/driver"
)

// TestMasks: a cached mask is what evaluating its filter on every slot
// gives, after any sequence of entity changes, appearances and removals,
// with more filters in turn than the cache keeps.
func TestMasks(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 9))
	tags := []string{"a", "b", "c"}
	types := []driver.EntityType{"memory", "task", "person"}
	random := func() *driver.FilterView {
		return &driver.FilterView{Type: types[rng.IntN(len(types))], Status: "active", Visibility: "shared",
			Tags: []string{tags[rng.IntN(len(tags))]}}
	}
	var ents []*driver.FilterView // nil: a free slot
	for range 50 {
		ents = append(ents, random())
	}
	view := func(i int) *driver.FilterView { return ents[i] }
	filters := []driver.EntityFilter{{}, {Tags: []string{"a"}}, {Tags: []string{"b"}}, {Types: []driver.EntityType{"task"}},
		{Types: []driver.EntityType{"person"}, Tags: []string{"c"}}, {Tags: []string{"c"}}}
	var m Masks
	for round := range 400 {
		f := &filters[rng.IntN(len(filters))]
		got := m.Admitted(f, len(ents), view)
		match := f.Matcher()
		if len(got) < len(ents) {
			t.Fatalf("round %d: mask of %d slots for %d entities", round, len(got), len(ents))
		}
		for i := range ents {
			if want := ents[i] != nil && match.Admits(ents[i]); got[i] != want {
				t.Fatalf("round %d, filter %s, slot %d: admitted %v, want %v", round, fmt.Sprint(*f), i, got[i], want)
			}
		}
		// A change, an appearance or a removal, as a store applies it.
		switch slot := rng.IntN(len(ents)); rng.IntN(3) {
		case 0:
			ents[slot] = random()
			m.Changed(int32(slot), view)
		case 1:
			ents = append(ents, random())
			m.Changed(int32(len(ents)-1), view)
		case 2:
			ents[slot] = nil
			m.Changed(int32(slot), view)
		}
	}
}
