package vecscan

import (
	"math/rand/v2"
	"testing"
)

// TestSplitKernel: the int8 pass's sum through the byte-split query
// (dotSplit, AVX-512 VNNI where the CPU has it) is dotI8Go's, for every
// stride the sets use and codes at the ends of their ranges; the parts
// (a, b) are the portable code's.
func TestSplitKernel(t *testing.T) {
	t.Parallel()
	t.Logf("AVX-512 VNNI kernel: %v", hasVNNI)
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{32, 64, 96, 128, 192, 224, 256, 288, 512, 544, 1536, 2016} {
		for trial := range 20 {
			x, v := make([]int16, n), make([]int8, n)
			for i := range x {
				switch trial {
				case 0: // extremes
					x[i], v[i] = int16([]int{-32768, 32767, -1, 0, 255, -256}[i%6]), int8([]int{-128, 127, -1, 0}[i%4])
				default:
					x[i], v[i] = int16(r.IntN(65536)-32768), int8(r.IntN(256)-128)
				}
			}
			q := newI8Query(x)
			if got, want := q.dot(v), dotI8Go(x, v); got != want {
				t.Fatalf("n=%d trial %d: %d, want %d", n, trial, got, want)
			}
			lo, hi := make([]byte, n), make([]byte, n)
			for i, c := range x {
				lo[i], hi[i] = byte(c), byte(c>>8)
			}
			a, b := dotSplit(lo, hi, v)
			if wa, wb := dotSplitGo(lo, hi, v); a != wa || b != wb {
				t.Fatalf("n=%d trial %d: parts %d, %d, want %d, %d", n, trial, a, b, wa, wb)
			}
		}
	}
}

// BenchmarkDotI8: one int8-pass product at 1,536 dimensions over a set of
// 6,000 vectors (as the REST load's): the int16 AVX2 kernel against the
// byte-split query.
func BenchmarkDotI8(b *testing.B) {
	const n, rows = 1536, 6000
	r := rand.New(rand.NewPCG(1, 2))
	x, v := make([]int16, n), make([]int8, n*rows)
	for i := range x {
		x[i] = int16(r.IntN(65535) - 32767)
	}
	for i := range v {
		v[i] = int8(r.IntN(255) - 127)
	}
	var sink int32
	b.Run("int16", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			s := i % rows
			sink += dotI8(x, v[s*n:(s+1)*n])
		}
	})
	b.Run("split", func(b *testing.B) {
		if !hasVNNI {
			b.Skip("no AVX-512 VNNI")
		}
		q := newI8Query(x)
		for i := 0; b.Loop(); i++ {
			s := i % rows
			sink += q.dot(v[s*n : (s+1)*n])
		}
	})
	_ = sink
}
