package vecscan

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/uuid"
)

// bruteTopK is the reference: exact cosine of every admitted vector,
// ordered as PostgreSQL's exact plan selects them.
func bruteTopK(vs *Set, x []float32, admit func(int32) bool, k int) []Scored {
	xss := SquaredNorm(x)
	var all []Scored
	for s := range vs.Len() {
		if !admit(vs.ent[s]) {
			continue
		}
		all = append(all, Scored{Slot: int32(s), RID: vs.rid[s], Chunk: vs.chunk[s], Sim: cosine(x, xss, vs.vectorInto(int32(s), nil), vs.ss[s])})
	}
	slices.SortFunc(all, lessScored)
	return all[:min(k, len(all))]
}

// maskOf is admit as topK's mask of the entity slots the tests use (0-9).
func maskOf(admit func(int32) bool) []bool {
	m := make([]bool, 10)
	for e := range m {
		m[e] = admit(int32(e))
	}
	return m
}

func sameScored(a, b []Scored) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].RID != b[i].RID || !(a[i].Sim == b[i].Sim || math.IsNaN(a[i].Sim) && math.IsNaN(b[i].Sim)) {
			return false
		}
	}
	return true
}

func TestTopKIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name      string
		n, dims   int
		clustered bool
	}{
		{"random-64", 3000, 64, false},
		{"random-100", 2500, 100, false},
		{"clustered-256", 4000, 256, true},
		{"tiny-3", 50, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := New(tc.dims)
			base := make([]float32, tc.dims)
			for i := range base {
				base[i] = float32(r.NormFloat64())
			}
			var dup []float32
			for i := range tc.n {
				v := make([]float32, tc.dims)
				for j := range v {
					if tc.clustered {
						v[j] = base[j] + 0.05*float32(r.NormFloat64())
					} else {
						v[j] = float32(r.NormFloat64())
					}
				}
				switch {
				case i%97 == 0:
					clear(v) // zero vectors: NaN similarity
				case i%53 == 0 && dup != nil:
					copy(v, dup) // exact ties, broken by id
				case i == 1:
					dup = v
				}
				vs.Put(int64(i+1), uuid.New(), int32(i%10), v)
			}
			// Removals keep the set consistent.
			for i := 0; i < tc.n/10; i++ {
				vs.Remove(int64(r.IntN(tc.n) + 1))
			}
			filters := map[string]func(int32) bool{
				"all":    func(int32) bool { return true },
				"half":   func(e int32) bool { return e%2 == 0 },
				"narrow": func(e int32) bool { return e == 3 },
				"none":   func(int32) bool { return false },
			}
			queries := 20
			if raceEnabled {
				queries = 4
			}
			for q := 0; q < queries; q++ {
				x := make([]float32, tc.dims)
				for j := range x {
					if tc.clustered {
						x[j] = base[j] + 0.05*float32(r.NormFloat64())
					} else {
						x[j] = float32(r.NormFloat64())
					}
				}
				if q == 0 {
					copy(x, dup)
				}
				for name, admit := range filters {
					for _, k := range []int{1, 10, 50, 200, tc.n} {
						for _, workers := range []int{1, 3} {
							for _, skip4 := range []int32{0, 1 << 30} { // with and without the 4-bit pass
								vs.skip4.Store(skip4)
								got := vs.TopK(x, maskOf(admit), k, workers)
								want := bruteTopK(vs, x, admit, k)
								if !sameScored(got, want) {
									t.Fatalf("query %d filter %s k %d workers %d skip4 %d: topK differs from a full exact scan (%d vs %d results)",
										q, name, k, workers, skip4, len(got), len(want))
								}
							}
						}
					}
				}
			}
			// A zero query: every similarity is NaN, ordered by id.
			if got, want := vs.TopK(make([]float32, tc.dims), maskOf(filters["all"]), 10, 2), bruteTopK(vs, make([]float32, tc.dims), filters["all"], 10); !sameScored(got, want) {
				t.Fatal("zero query differs")
			}
		})
	}
}

func TestQuantizeBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for range 200 {
		d := 1 + r.IntN(1500)
		v, x := make([]float32, d), make([]float32, d)
		for i := range v {
			v[i], x[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		st := strideOf(d)
		q8 := make([]int8, st)
		vss, vscale, verr := quantize(v, q8)
		code, xss, xscale, xerr := quantizeQuery(x, st)
		approx := xscale * vscale * float64(dotI8(code, q8))
		exact := dot64(x, v) / math.Sqrt(xss*vss)
		if b := xerr*(1+verr) + verr + boundSlack; math.Abs(exact-approx) > b {
			t.Fatalf("d=%d: |exact-approx| = %g exceeds the bound %g", d, math.Abs(exact-approx), b)
		}
		if got, want := dotI8(code, q8), dotI8Go(code, q8); got != want {
			t.Fatalf("kernel %d, portable %d", got, want)
		}
		// The 4-bit code: an int8 query code against it.
		st4 := stride4Of(d)
		q4 := make([]byte, st4)
		var maxBits uint32
		for _, e := range v {
			maxBits = max(maxBits, absBits(e))
		}
		v4scale, v4err := quantize4With(v, q4, vss, math.Float32frombits(maxBits))
		x8 := make([]int8, 2*st4)
		_, x8scale, x8err := quantize(x, x8)
		var x8sum, want4 int32
		for i, c := range x8 {
			x8sum += int32(c)
			b := q4[i/64*32+i%32]
			nib := b & 15
			if i%64 >= 32 {
				nib = b >> 4
			}
			want4 += (int32(nib) - 8) * int32(c)
		}
		if got := dotU4(x8, q4) - 8*x8sum; got != want4 {
			t.Fatalf("d=%d: 4-bit kernel %d, want %d", d, got, want4)
		}
		if got := dotU4Go(x8, q4) - 8*x8sum; got != want4 {
			t.Fatalf("d=%d: portable 4-bit kernel %d, want %d", d, got, want4)
		}
		approx4 := x8scale * v4scale * float64(want4)
		if b := x8err*(1+v4err) + v4err + boundSlack; math.Abs(exact-approx4) > b {
			t.Fatalf("d=%d: 4-bit |exact-approx| = %g exceeds the bound %g", d, math.Abs(exact-approx4), b)
		}
	}
}

// TestQuantizeQueryNoOverflow: the query code's levels are capped so that
// the kernel's int32 sums cannot overflow, even for the flattest vectors
// of the most dimensions, where every product is at its largest.
func TestQuantizeQueryNoOverflow(t *testing.T) {
	for _, d := range []int{32, 1024, 4096, 16000} {
		x, v := make([]float32, d), make([]float32, d)
		for i := range x {
			x[i], v[i] = 1, 1
		}
		st := strideOf(d)
		q8 := make([]int8, st)
		vss, vscale, verr := quantize(v, q8)
		code, xss, xscale, xerr := quantizeQuery(x, st)
		var sum int64
		for i := range code {
			sum += int64(code[i]) * int64(q8[i])
		}
		if sum > math.MaxInt32 {
			t.Fatalf("d=%d: the exact code product %d overflows int32", d, sum)
		}
		if got := dotI8(code, q8); int64(got) != sum {
			t.Fatalf("d=%d: kernel %d, exact %d", d, got, sum)
		}
		approx := xscale * vscale * float64(dotI8(code, q8))
		exact := dot64(x, v) / math.Sqrt(xss*vss)
		if b := xerr*(1+verr) + verr + boundSlack; math.Abs(exact-approx) > b {
			t.Fatalf("d=%d: |exact-approx| = %g exceeds the bound %g", d, math.Abs(exact-approx), b)
		}
	}
}

// TestQuantizeKernels: the codes (AVX2 where available) are those of the
// plain definition, floor(u[i]·levels/max|u| + 0.5), and the error norms
// are the norms of the codes' errors.
func TestQuantizeKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, d := range []int{1, 7, 8, 63, 64, 65, 100, 1024, 1536, 3000} {
		v := make([]float32, d)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		var ss float64
		var maxBits uint32
		for _, x := range v {
			ss += float64(x) * float64(x)
			maxBits = max(maxBits, absBits(x))
		}
		m := math.Float32frombits(maxBits)
		inv := 1 / math.Sqrt(ss)
		q8, q4 := make([]int8, strideOf(d)), make([]byte, stride4Of(d))
		for i := range q8 {
			q8[i] = 99 // the padding must be cleared
		}
		sc, e := quantizeWith(v, q8, ss, m)
		sc4, e4 := quantize4With(v, q4, ss, m)
		var want, want4 float64
		for i := range strideOf(d) {
			var x float64
			if i < d {
				x = float64(v[i])
			}
			c := math.Floor(x*(127/float64(m)) + 0.5)
			if int8(c) != q8[i] {
				t.Fatalf("d=%d: int8 code %d is %d, want %d", d, i, q8[i], int8(c))
			}
			want += (x*inv - sc*c) * (x*inv - sc*c)
		}
		for i := range 2 * stride4Of(d) {
			var x float64
			if i < d {
				x = float64(v[i])
			}
			c := math.Floor(x*(7/float64(m)) + 0.5)
			b := q4[i/64*32+i%32]
			nib := b & 15
			if i%64 >= 32 {
				nib = b >> 4
			}
			if int(nib) != int(c)+8 {
				t.Fatalf("d=%d: 4-bit code %d is %d, want %d", d, i, int(nib)-8, int(c))
			}
			want4 += (x*inv - sc4*c) * (x*inv - sc4*c)
		}
		if math.Abs(e-math.Sqrt(want)) > 1e-12 || math.Abs(e4-math.Sqrt(want4)) > 1e-12 {
			t.Fatalf("d=%d: error norms %g, %g, want %g, %g", d, e, e4, math.Sqrt(want), math.Sqrt(want4))
		}
	}
}

// TestVecSetChunkIDs: after any sequence of puts and removes, including a
// chunk id stored again under a new rid just before its old rid is removed
// (a chunk id names one row of the database, so it is never held by two
// rids otherwise), similarityOf finds exactly the live chunk ids, each
// with its own vector.
func TestVecSetChunkIDs(t *testing.T) {
	t.Parallel()
	const dims = 8
	r := rand.New(rand.NewPCG(3, 4))
	vs := New(dims)
	ids := make([]uuid.UUID, 12)
	for i := range ids {
		ids[i] = uuid.New()
	}
	live := map[int64]uuid.UUID{} // rid → chunk id
	x := make([]float32, dims)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for step := range 2000 {
		rid := int64(r.IntN(20))
		if _, ok := live[rid]; ok && r.IntN(3) == 0 {
			vs.Remove(rid)
			delete(live, rid)
		} else {
			v := make([]float32, dims)
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
			id := ids[r.IntN(len(ids))]
			var old int64 = -1
			for orid, oid := range live {
				if oid == id && orid != rid {
					old = orid
				}
			}
			vs.Put(rid, id, 0, v)
			live[rid] = id
			if old >= 0 {
				// The chunk moved to a new rid; its old row goes next.
				vs.Remove(old)
				delete(live, old)
			}
		}
		// The id a search should resolve: the live rid holding it (when
		// two rids hold one id, either is a valid answer).
		want := map[uuid.UUID][]int64{}
		for rid, id := range live {
			want[id] = append(want[id], rid)
		}
		xss := SquaredNorm(x)
		for _, id := range ids {
			got, ok := vs.SimilarityOf(x, xss, id)
			if ok != (len(want[id]) > 0) {
				t.Fatalf("step %d: id %v found=%v, live rids %v", step, id, ok, want[id])
			}
			if !ok {
				continue
			}
			match := false
			for _, rid := range want[id] {
				if sim, _ := vs.Similarity(x, xss, rid); sim == got {
					match = true
				}
			}
			if !match {
				t.Fatalf("step %d: id %v similarity %v matches none of rids %v", step, id, got, want[id])
			}
		}
	}
}
