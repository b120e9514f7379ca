package vecscan

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/uuid"
)

// TestTopKCachedIsExact: a query asked again after stores near it (which
// enter its result), stores of entities the filter refuses, replacements
// and removals of vectors in its result, removals that move the last slot,
// filter changes announced by maskGen, zero vectors, exact ties, a zero
// query and more changes than the log keeps, gets a full exact scan's
// result every time, and most repeats are brought up to date rather than
// scanned again.
func TestTopKCachedIsExact(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(21, 22))
	const dims = 48
	vs := New(dims)
	near := func(x []float32, eps float32) []float32 {
		v := make([]float32, dims)
		for j := range v {
			v[j] = x[j] + eps*float32(r.NormFloat64())
		}
		return v
	}
	zero := make([]float32, dims)
	queries := [][]float32{near(zero, 1), near(zero, 1), zero}
	next := int64(1)
	put := func(v []float32, ent int32) int64 {
		vs.Put(next, uuid.New(), ent, v)
		next++
		return next - 1
	}
	for i := range 500 {
		switch {
		case i%25 == 0:
			put(make([]float32, dims), int32(r.IntN(9))) // a zero vector: NaN similarity
		case i%40 == 1:
			put(queries[0], int32(r.IntN(9))) // an exact tie with query 0, broken by id
			put(queries[0], int32(r.IntN(9)))
		default:
			put(near(zero, 1), int32(r.IntN(9)))
		}
	}
	admitted := make([]bool, 10) // entity 9 is never admitted
	for e := range 9 {
		admitted[e] = true
	}
	var maskGen uint64
	hits, searches := 0, 0
	rounds := 400
	if raceEnabled {
		rounds = 100
	}
	last := map[int][]Scored{} // the last result of each query
	for round := range rounds {
		qi := (round / 9) % len(queries) // each query meets every change below
		x := queries[qi]
		switch round % 9 {
		case 0, 1: // stores close to the query: they enter its result
			for range 1 + r.IntN(3) {
				put(near(x, 0.05), int32(r.IntN(9)))
			}
		case 2: // close, but of an entity the filter refuses
			put(near(x, 0.01), 9)
		case 3: // a vector of the last result is replaced by a far one
			if res := last[qi]; len(res) > 0 {
				rid := res[r.IntN(len(res))].RID
				if s, ok := vs.slot[rid]; ok {
					vs.Put(rid, vs.chunk[s], vs.ent[s], near(zero, 1))
				}
			}
		case 4: // a vector of the last result is removed
			if res := last[qi]; len(res) > 0 {
				vs.Remove(res[r.IntN(len(res))].RID)
			}
		case 5: // an old vector is removed: the last slot (a recent store, in the result) moves into its place
			vs.Remove(1 + r.Int64N(400))
		case 6: // the filter changes, and the caller says so
			if r.IntN(3) == 0 {
				admitted[r.IntN(9)] = r.IntN(2) == 0
				maskGen++
			}
		case 7:
			if round%90 == 7 {
				for range changeLogKeep + 100 { // more changes than the log keeps
					put(near(zero, 1), int32(r.IntN(9)))
				}
			}
		}
		for _, k := range []int{1, 10, 60} {
			var e *cachedTopK
			if vs.cache.entries != nil {
				e = vs.cache.entries[queryKey(vs.cache.seed, x, "f", k)]
			}
			remembered := false
			if e != nil && e.k == k && e.maskGen == maskGen && sameBits(e.x, x) {
				_, remembered = vs.refresh(e, x, admitted)
			}
			got := vs.TopKCached(x, admitted, k, 1, "f", maskGen)
			want := bruteTopK(vs, x, func(e int32) bool { return admitted[e] }, k)
			searches++
			if remembered {
				hits++
			}
			if !sameScored(got, want) {
				t.Fatalf("round %d query %d k %d (brought up to date: %v): differs from a full exact scan:\ngot  %v\nwant %v",
					round, qi, k, remembered, brief(got), brief(want))
			}
			for _, g := range got {
				if vs.rid[g.Slot] != g.RID {
					t.Fatalf("round %d: result slot %d holds rid %d, not %d", round, g.Slot, vs.rid[g.Slot], g.RID)
				}
			}
			if k == 60 {
				last[qi] = got
			}
		}
	}
	t.Logf("%d of %d searches brought a remembered result up to date", hits, searches)
	if hits < searches/3 {
		t.Fatalf("only %d of %d searches brought a remembered result up to date", hits, searches)
	}
}

func brief(s []Scored) string {
	out := ""
	for _, x := range s[:min(5, len(s))] {
		out += fmt.Sprintf("%d:%.4f ", x.RID, x.Sim)
	}
	return out
}
