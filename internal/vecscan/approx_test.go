package vecscan

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/uuid"
)

// approxSet is n vectors around a few centres, with a shared offset (as
// embeddings have: their mean is far from zero), and with zeros a zero
// vector every 211th (NaN similarities, which rank first).
func approxSet(r *rand.Rand, n, dims, centres int, zeros bool) (*Set, [][]float32) {
	vs := New(dims)
	offset := make([]float32, dims)
	for i := range offset {
		offset[i] = float32(r.NormFloat64() * 0.5)
	}
	cs := make([][]float32, centres)
	for c := range cs {
		cs[c] = make([]float32, dims)
		for i := range cs[c] {
			cs[c][i] = offset[i] + float32(r.NormFloat64())
		}
	}
	for s := range n {
		v := make([]float32, dims)
		if !zeros || s%211 != 5 {
			for i := range v {
				v[i] = cs[s%centres][i] + float32(r.NormFloat64()*0.8)
			}
		}
		vs.Put(int64(s+1), uuid.New(), int32(s%10), v)
	}
	return vs, cs
}

// TestTopKApproxCoversSet: when the candidates cover every admitted vector,
// TopKApprox is exact, zero vectors (NaN) first, whatever the filter.
func TestTopKApproxCoversSet(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	vs, cs := approxSet(r, 3000, 96, 6, true)
	filters := map[string]func(int32) bool{
		"all":    func(int32) bool { return true },
		"half":   func(e int32) bool { return e%2 == 0 },
		"narrow": func(e int32) bool { return e == 3 },
		"none":   func(int32) bool { return false },
	}
	for q := range 6 {
		x := slices.Clone(cs[q%len(cs)])
		for i := range x {
			x[i] += float32(r.NormFloat64())
		}
		for name, admit := range filters {
			admitted := 0
			for s := range vs.Len() {
				if admit(vs.ent[s]) {
					admitted++
				}
			}
			for _, k := range []int{1, 10, 100} {
				want := bruteTopK(vs, x, admit, k)
				for _, c := range []int{max(admitted, 1), vs.Len() + 1} {
					got, all := vs.TopKApprox(x, maskOf(admit), k, c, 2)
					if !sameScored(got, want) || !all {
						t.Fatalf("query %d filter %s k %d candidates %d: not the exact top k (every vector a candidate: %v)", q, name, k, c, all)
					}
				}
			}
		}
	}
}

// TestTopKApproxRecall measures recall@10 against exact ranking with 5%
// of the set as candidates, and checks what any answer must be: exact
// similarities, in PostgreSQL's order, of admitted vectors only.
func TestTopKApproxRecall(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(13, 14))
	n := 20000
	if raceEnabled {
		n = 4000
	}
	vs, cs := approxSet(r, n, 256, 40, false)
	even := func(e int32) bool { return e%2 == 0 }
	found, total := 0, 0
	xss := func(x []float32) float64 { return SquaredNorm(x) }
	for q := range 40 {
		x := slices.Clone(cs[q%len(cs)])
		for i := range x {
			x[i] += float32(r.NormFloat64() * 0.9)
		}
		admit := func(int32) bool { return true }
		if q%4 == 3 {
			admit = even
		}
		got, all := vs.TopKApprox(x, maskOf(admit), 10, n/20, 2)
		if all {
			t.Fatalf("query %d: every vector a candidate with %d of %d", q, n/20, n)
		}
		want := bruteTopK(vs, x, admit, 10)
		if len(got) != len(want) {
			t.Fatalf("query %d: %d results, want %d", q, len(got), len(want))
		}
		in := map[int64]bool{}
		for _, s := range want {
			in[s.RID] = true
		}
		for i, s := range got {
			if !admit(vs.ent[s.Slot]) {
				t.Fatalf("query %d: slot %d not admitted", q, s.Slot)
			}
			if sim, _ := vs.Similarity(x, xss(x), s.RID); sim != s.Sim && !(math.IsNaN(sim) && math.IsNaN(s.Sim)) {
				t.Fatalf("query %d: similarity %g, exact %g", q, s.Sim, sim)
			}
			if i > 0 && lessScored(got[i-1], s) > 0 {
				t.Fatalf("query %d: results out of order at %d", q, i)
			}
			if in[s.RID] {
				found++
			}
		}
		total += len(want)
	}
	recall := float64(found) / float64(total)
	t.Logf("recall@10 with 5%% of %d vectors as candidates: %.3f", n, recall)
	if recall < 0.9 {
		t.Fatalf("recall@10 %.3f < 0.9", recall)
	}
}

// BenchmarkTopK compares a search's vector ranking at 200,000 vectors of
// 1,536 dimensions: exact (TopK), and TopKApprox with 1% and 2% of the set
// as candidates.
func BenchmarkTopK(b *testing.B) {
	r := rand.New(rand.NewPCG(15, 16))
	const n, dims = 200_000, 1536
	vs, cs := approxSet(r, n, dims, 200, false)
	all := make([]bool, 10)
	for i := range all {
		all[i] = true
	}
	queries := make([][]float32, 16)
	for q := range queries {
		queries[q] = slices.Clone(cs[q])
		for i := range queries[q] {
			queries[q][i] += float32(r.NormFloat64())
		}
	}
	for _, c := range []struct {
		name       string
		candidates int
	}{{"exact", 0}, {"approx-1pct", n / 100}, {"approx-2pct", n / 50}} {
		b.Run(c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				vs.TopKApprox(queries[i%len(queries)], all, 50, c.candidates, 2)
				i++
			}
		})
	}
}

// TestHammingKernel: the AVX2 kernel counts as the portable loop does.
func TestHammingKernel(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(17, 18))
	for words := 4; words <= 256; words += 4 {
		a, b := make([]uint64, words), make([]uint64, words)
		for i := range a {
			a[i], b[i] = r.Uint64(), r.Uint64()
		}
		b[words-1] = ^a[words-1] // a block of all-differing bits
		if got, want := hamming(a, b), hammingGo(a, b); got != want {
			t.Fatalf("%d words: %d, want %d", words, got, want)
		}
	}
	// The batch kernel, over codes of 24 words (1,536 dimensions).
	const words, n = 24, 37
	x, v := make([]uint64, words), make([]uint64, words*n)
	for i := range x {
		x[i] = r.Uint64()
	}
	for i := range v {
		v[i] = r.Uint64()
	}
	copy(v[5*words:], x) // distance 0
	got, want := make([]uint16, n), make([]uint16, n)
	hammings(x, v, words, got)
	hammingsGo(x, v, words, want)
	if !slices.Equal(got, want) || got[5] != 0 {
		t.Fatalf("hammings: %v, want %v", got, want)
	}
}

// TestSignCode: bit i is set exactly when v[i] > 0, zeros of either sign
// and subnormals included, for lengths that do not fill the last word.
func TestSignCode(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(19, 20))
	special := []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -1}
	for _, dims := range []int{1, 3, 63, 64, 65, 100, 256, 1536} {
		v := make([]float32, dims)
		for i := range v {
			if i%5 == 0 {
				v[i] = special[r.IntN(len(special))]
			} else {
				v[i] = float32(r.NormFloat64())
			}
		}
		words := (dims + 255) / 256 * 4
		got := make([]uint64, words)
		for i := range got {
			got[i] = ^uint64(0) // stale bits must go
		}
		signCode(v, got)
		want := make([]uint64, words)
		for i, x := range v {
			if x > 0 {
				want[i/64] |= 1 << (i % 64)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d dims: %x, want %x", dims, got, want)
		}
	}
}
