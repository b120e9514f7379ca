package vecscan

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDot64Kernels checks that the platform's dot64 gives dot64Go's bits
// for every length (the kernel's blocks of sixteen and the tail), and that
// both are within rounding of a plain float64 sum.
func TestDot64Kernels(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	lengths := []int{0, 1, 15, 16, 17, 31, 32, 33, 100, 1023, 1024, 1536, 3072}
	for range 50 {
		lengths = append(lengths, r.IntN(2100))
	}
	for _, n := range lengths {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64()*1e-3)
		}
		got, want := dot64(a, b), dot64Go(a, b)
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("n=%d: dot64 %v, dot64Go %v", n, got, want)
		}
		var plain, mag float64
		for i := range a {
			plain += float64(a[i]) * float64(b[i])
			mag += math.Abs(float64(a[i]) * float64(b[i]))
		}
		if math.Abs(got-plain) > 1e-12*mag+1e-300 {
			t.Fatalf("n=%d: dot64 %v, plain sum %v", n, got, plain)
		}
	}
}

func BenchmarkDot64(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	x, y := make([]float32, 1536), make([]float32, 1536)
	for i := range x {
		x[i], y[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	b.Run("kernel", func(b *testing.B) {
		for b.Loop() {
			dot64(x, y)
		}
	})
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			dot64Go(x, y)
		}
	})
}
