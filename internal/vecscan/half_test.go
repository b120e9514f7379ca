package vecscan

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/uuid"
)

// TestHalfRoundTrip checks toHalf against the definition: every binary16
// value converts back to itself, and a float32 goes to the nearest binary16
// (ties to even), saturating at ±65504.
func TestHalfRoundTrip(t *testing.T) {
	t.Parallel()
	for h := range 1 << 16 {
		f := fromHalf(uint16(h))
		if math.IsNaN(float64(f)) {
			if g := toHalf(f); fromHalf(g) == fromHalf(g) {
				t.Fatalf("NaN %#04x → %#04x, not NaN", h, g)
			}
			continue
		}
		if math.IsInf(float64(f), 0) {
			continue
		}
		if g := toHalf(f); g != uint16(h) {
			t.Fatalf("%#04x (%g) → %#04x", h, f, g)
		}
	}
	// The finite binary16 values in order, to find the nearest by search.
	var vals []float64
	for h := 0; h < 0x7c00; h++ {
		vals = append(vals, float64(fromHalf(uint16(h))))
	}
	nearest := func(x float64) float64 {
		a := math.Abs(x)
		if a >= maxHalf {
			return math.Copysign(maxHalf, x)
		}
		lo, hi := 0, len(vals)-1
		for hi-lo > 1 {
			m := (lo + hi) / 2
			if vals[m] <= a {
				lo = m
			} else {
				hi = m
			}
		}
		best := vals[lo]
		if d1, d2 := a-vals[lo], vals[hi]-a; d2 < d1 || d2 == d1 && hi%2 == 0 {
			best = vals[hi]
		}
		return math.Copysign(best, x)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		var x float32
		switch r.IntN(3) {
		case 0:
			x = float32(r.NormFloat64() * 0.05) // embedding-like
		case 1:
			x = math.Float32frombits(r.Uint32()) // any bit pattern
		default:
			x = float32(math.Ldexp(r.Float64(), -r.IntN(30))) // small, subnormal range
		}
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			continue
		}
		got, want := float64(fromHalf(toHalf(x))), nearest(float64(x))
		if got != want && !(got == 0 && want == 0) {
			t.Fatalf("toHalf(%g) = %g, want %g", x, got, want)
		}
	}
	if g := fromHalf(toHalf(float32(math.Inf(1)))); g != maxHalf {
		t.Fatalf("+Inf → %g, want %d", g, maxHalf)
	}
}

// TestHalfTopKIsExact checks that a half-precision set ranks exactly on its
// rounded vectors (the pruning bounds hold for them), and measures recall@10
// against float32 ranking: at least 0.95 is the bar (issue 17); on these
// sets it is well above.
func TestHalfTopKIsExact(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	const n, dims, k = 4000, 256, 10
	full, half := New(dims), NewHalf(dims)
	centres := make([][]float32, 8)
	for c := range centres {
		centres[c] = make([]float32, dims)
		for i := range centres[c] {
			centres[c][i] = float32(r.NormFloat64())
		}
	}
	for s := range n {
		v := make([]float32, dims)
		for i := range v {
			v[i] = centres[s%8][i] + float32(r.NormFloat64()*0.4)
		}
		id := uuid.New()
		full.Put(int64(s+1), id, int32(s%10), v)
		half.Put(int64(s+1), id, int32(s%10), v)
	}
	if got, want := half.Bytes(), full.Bytes(); got >= want*3/4 {
		t.Errorf("half set holds %d bytes, float32 set %d: want well under 3/4", got, want)
	}
	all := func(int32) bool { return true }
	var found, total int
	for q := range 50 {
		x := make([]float32, dims)
		for i := range x {
			x[i] = centres[q%8][i] + float32(r.NormFloat64()*0.5)
		}
		got := half.TopK(x, maskOf(all), k, 2)
		if want := bruteTopK(half, x, all, k); !sameScored(got, want) {
			t.Fatalf("query %d: half TopK differs from the exact ranking of its vectors", q)
		}
		ref := full.TopK(x, maskOf(all), k, 2)
		in := map[int64]bool{}
		for _, s := range ref {
			in[s.RID] = true
		}
		for _, s := range got {
			if in[s.RID] {
				found++
			}
			if sim, ok := full.Similarity(x, SquaredNorm(x), s.RID); !ok || math.Abs(sim-s.Sim) > 2e-3 {
				t.Fatalf("query %d: half similarity %g, float32 %g", q, s.Sim, sim)
			}
		}
		total += len(ref)
	}
	recall := float64(found) / float64(total)
	t.Logf("recall@10 of half precision against float32: %.3f", recall)
	if recall < 0.95 {
		t.Fatalf("recall@10 %.3f < 0.95", recall)
	}
}

// BenchmarkPut stores 1,536-dimension vectors (codes included), float32
// and half precision, replacing 10,000 slots round robin.
func BenchmarkPut(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	vecs := make([][]float32, 64)
	for i := range vecs {
		vecs[i] = make([]float32, 1536)
		for j := range vecs[i] {
			vecs[i][j] = float32(r.NormFloat64() * 0.03)
		}
	}
	ids := make([]uuid.UUID, 10_000)
	for i := range ids {
		ids[i] = uuid.New()
	}
	for _, half := range []bool{false, true} {
		name := "float32"
		if half {
			name = "half"
		}
		b.Run(name, func(b *testing.B) {
			vs := New(1536)
			if half {
				vs = NewHalf(1536)
			}
			i := 0
			for b.Loop() {
				vs.Put(int64(i%len(ids)+1), ids[i%len(ids)], 0, vecs[i%len(vecs)])
				i++
			}
		})
	}
}
