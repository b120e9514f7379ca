package sqlite

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/uuid"
)

// bruteTopK is the reference: exact cosine of every admitted vector,
// ordered as PostgreSQL's exact plan selects them.
func bruteTopK(vs *vecSet, x []float32, admit func(int32) bool, k int) []scored {
	xss := squaredNorm(x)
	var all []scored
	for s := range vs.len() {
		if !admit(vs.ent[s]) {
			continue
		}
		all = append(all, scored{slot: int32(s), rid: vs.rid[s], chunk: vs.chunk[s], sim: cosine(x, xss, vs.vector(int32(s)), vs.ss[s])})
	}
	slices.SortFunc(all, lessScored)
	return all[:min(k, len(all))]
}

func sameScored(a, b []scored) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].rid != b[i].rid || !(a[i].sim == b[i].sim || math.IsNaN(a[i].sim) && math.IsNaN(b[i].sim)) {
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
			vs := newVecSet(tc.dims)
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
				vs.put(int64(i+1), uuid.New(), int32(i%10), v)
			}
			// Removals keep the set consistent.
			for i := 0; i < tc.n/10; i++ {
				vs.remove(int64(r.IntN(tc.n) + 1))
			}
			filters := map[string]func(int32) bool{
				"all":    func(int32) bool { return true },
				"half":   func(e int32) bool { return e%2 == 0 },
				"narrow": func(e int32) bool { return e == 3 },
				"none":   func(int32) bool { return false },
			}
			queries := 20
			if RaceEnabled {
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
							got := vs.topK(x, admit, k, workers)
							want := bruteTopK(vs, x, admit, k)
							if !sameScored(got, want) {
								t.Fatalf("query %d filter %s k %d workers %d: topK differs from a full exact scan (%d vs %d results)",
									q, name, k, workers, len(got), len(want))
							}
						}
					}
				}
			}
			// A zero query: every similarity is NaN, ordered by id.
			if got, want := vs.topK(make([]float32, tc.dims), filters["all"], 10, 2), bruteTopK(vs, make([]float32, tc.dims), filters["all"], 10); !sameScored(got, want) {
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
	}
}
