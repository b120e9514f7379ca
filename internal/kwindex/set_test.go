package kwindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/uuid"

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
	ks := New()
	var docs [][]byte
	for i := range 200 {
		var b []byte
		for range 1 + r.IntN(120) {
			b = append(b, words[r.IntN(len(words))]...)
			b = append(b, ' ')
		}
		tsv := Encode(query.Vector(string(b)))
		if i%50 == 7 { // out of byte order: scored by the walk's fallback
			v := query.Vector(string(b))
			slices.Reverse(v)
			tsv = Encode(v)
		}
		docs = append(docs, tsv)
		ks.Add(Doc{RID: int64(i + 1), Chunk: uuid.New(), Content: string(b), TSV: tsv})
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
		q := Compile(ts, nil)
		// Score every chunk at once, in a shuffled order, as a pool.
		slots := make([]int32, len(docs))
		for i := range slots {
			slots[i] = int32(i)
		}
		r.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
		v := View{Set: ks}
		masks, ranks, _, err := v.score(slots, q, false)
		if err != nil {
			t.Fatal(err)
		}
		for k, s := range slots {
			var a DocTerms
			if err := q.Scan(docs[s], &a); err != nil {
				t.Fatal(err)
			}
			if q.Mask(&a) != masks[k] || q.RankCD(&a) != ranks[k] {
				t.Fatalf("query %d %q, doc %d: walk mask %b rank %v, posting lists mask %b rank %v",
					qi, ts, s, q.Mask(&a), q.RankCD(&a), masks[k], ranks[k])
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

	ks := New()
	doc := func(rid int64, text string) Doc {
		return Doc{RID: rid, Chunk: uuid.New(), Content: text, TSV: Encode(query.Vector(text))}
	}
	ks.Add(doc(1, "alpha beta"))
	ks.Add(doc(2, "beta gamma"))
	ks.Add(doc(3, "alpha gamma"))
	ks.Remove(2)
	q := Compile([]string{"gamma"}, nil)
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
	ks.Add(doc(2, "gamma again")) // a reused rid, below the last one
	if !ks.NeedsRebuild() {
		t.Fatal("a chunk out of rid order should call for a rebuild")
	}
	ks = ks.Rebuilt()
	if got := live(ks.matching(q, q.Of[0])); !slices.Equal(got, []int64{2, 3}) || ks.ndead != 0 || ks.nlive != 3 {
		t.Fatalf("rebuilt: gamma in %v, %d live, %d dead", got, ks.nlive, ks.ndead)
	}
}

// TestLinkIndexesEntities checks that a set loaded before its entities had
// slots (every Doc.Ent 0) finds each entity's chunks after Link, and drops
// the chunks of unknown entities.
func TestLinkIndexesEntities(t *testing.T) {
	t.Parallel()
	ks := New()
	for i := range 6 {
		ks.Add(Doc{RID: int64(i + 1), Chunk: uuid.New(), Content: "x", TSV: Encode(query.Vector("x"))})
	}
	owner := []int32{4, 2, 4, -1, 2, 7} // by slot; -1: unknown
	ks.Link(func(s int32) (int32, bool) { return owner[s], owner[s] >= 0 })
	want := map[int32][]int32{4: {0, 2}, 2: {1, 4}, 7: {5}}
	if fmt.Sprint(ks.byEnt) != fmt.Sprint(want) || ks.Live() != 5 {
		t.Fatalf("by entity %v (%d live), want %v (5 live)", ks.byEnt, ks.Live(), want)
	}
}
