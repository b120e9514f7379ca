package sqlite

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/query"
)

// TestKwScoreMatchesWalk checks that scoring a pool through the posting
// lists' position offsets gives exactly the masks and ranks of walking
// each chunk's whole tsvector, for random documents and queries, and that
// a tsvector out of order still scores.
func TestKwScoreMatchesWalk(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 300)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i*7%1000)
	}
	ks := newKwSet()
	var docs [][]byte
	for i := range 200 {
		var b []byte
		for range 1 + r.IntN(120) {
			b = append(b, words[r.IntN(len(words))]...)
			b = append(b, ' ')
		}
		tsv := encodeTSV(query.Vector(string(b)))
		if i%50 == 7 { // out of byte order: scored by the walk's fallback
			v := query.Vector(string(b))
			slices.Reverse(v)
			tsv = encodeTSV(v)
		}
		docs = append(docs, tsv)
		ks.add(kwDoc{rid: int64(i + 1), chunk: uuid.New(), content: string(b), tsv: tsv})
	}
	for qi := range 300 {
		n := 1 + r.IntN(5)
		ts := make([]string, n)
		for j := range ts {
			ts[j] = words[r.IntN(len(words))]
			if r.IntN(4) == 0 {
				ts[j] += " " + words[r.IntN(len(words))]
			}
			if r.IntN(10) == 0 {
				ts[j] = "absent"
			}
		}
		q := compileTerms(ts, nil)
		// Score every chunk at once, in a shuffled order, as a pool.
		slots := make([]int32, len(docs))
		for i := range slots {
			slots[i] = int32(i)
		}
		r.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
		v := kwView{ks: ks}
		masks, ranks, _, err := v.score(slots, q, false)
		if err != nil {
			t.Fatal(err)
		}
		for k, s := range slots {
			var a docTerms
			if err := q.scan(docs[s], &a); err != nil {
				t.Fatal(err)
			}
			if q.mask(&a) != masks[k] || q.rankCD(&a) != ranks[k] {
				t.Fatalf("query %d %q, doc %d: walk mask %b rank %v, posting lists mask %b rank %v",
					qi, ts, s, q.mask(&a), q.rankCD(&a), masks[k], ranks[k])
			}
		}
	}
}

// TestKwPostings checks the posting-list algebra against brute force, and
// that removal and rebuilding keep the lists to the live chunks in rid
// order.
func TestKwPostings(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		lists := make([][]int32, 1+r.IntN(4))
		for i := range lists {
			for v := range int32(300) {
				if r.IntN(1+i*3) == 0 {
					lists[i] = append(lists[i], v)
				}
			}
		}
		var want, wantU []int32
		for v := range int32(300) {
			in, some := true, false
			for _, l := range lists {
				_, ok := slices.BinarySearch(l, v)
				in, some = in && ok, some || ok
			}
			if in {
				want = append(want, v)
			}
			if some {
				wantU = append(wantU, v)
			}
		}
		if got := intersect(lists); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("intersect: got %v, want %v", got, want)
		}
		var gotU []int32
		union(lists, func(v int32) bool { gotU = append(gotU, v); return true })
		if !slices.Equal(gotU, wantU) {
			t.Fatalf("union: got %v, want %v", gotU, wantU)
		}
	}

	ks := newKwSet()
	doc := func(rid int64, text string) kwDoc {
		return kwDoc{rid: rid, chunk: uuid.New(), content: text, tsv: encodeTSV(query.Vector(text))}
	}
	ks.add(doc(1, "alpha beta"))
	ks.add(doc(2, "beta gamma"))
	ks.add(doc(3, "alpha gamma"))
	ks.remove(2)
	q := compileTerms([]string{"gamma"}, nil)
	live := func(slots []int32) []int64 {
		var out []int64
		for _, s := range slots {
			if ks.live[s] {
				out = append(out, ks.rid[s])
			}
		}
		return out
	}
	if got := live(ks.matching(q, q.Of[0])); !slices.Equal(got, []int64{3}) {
		t.Fatalf("after removal, gamma is in %v", got)
	}
	ks.add(doc(2, "gamma again")) // a reused rid, below the last one
	if !ks.needsRebuild() {
		t.Fatal("a chunk out of rid order should call for a rebuild")
	}
	ks = ks.rebuilt()
	if got := live(ks.matching(q, q.Of[0])); !slices.Equal(got, []int64{2, 3}) || ks.ndead != 0 || ks.nlive != 3 {
		t.Fatalf("rebuilt: gamma in %v, %d live, %d dead", got, ks.nlive, ks.ndead)
	}
}

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
		a := entAttr{live: true, rid: rid, id: uuid.New(), FilterView: driver.FilterView{Type: types[r.IntN(len(types))], Status: postgram.StatusActive,
			Visibility: postgram.VisibilityWork, UpdatedAt: int64(r.IntN(1000))}}
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
				a.id = loc.sp.ents[loc.slot].id
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
