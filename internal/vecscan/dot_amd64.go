//go:build !purego

package vecscan

import "golang.org/x/sys/cpu"

//go:noescape
func dotI16I8AVX2(x *int16, v *int8, n int) int32

//go:noescape
func dotU4I8AVX2(x *int8, v *byte, n int) int32

//go:noescape
func quantI8AVX2(v *float32, dst *int8, n int, k, inv, scale float64) float64

//go:noescape
func quantU4AVX2(v *float32, dst *byte, blocks int, k, inv, scale float64) float64

//go:noescape
func dot64AVX2(a, b *float32, n int) float64

//go:noescape
func hammingsAVX2(x, v *uint64, words, n int, out *uint16)

//go:noescape
func dotSplitVNNI(lo, hi *byte, v *int8, n int) (a, b int32)

// hasVNNI: AVX-512 with VNNI (and BW, VL for the kernel's byte and
// 256-bit forms), with the OS saving the registers.
var hasVNNI = cpu.X86.HasAVX512 && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI

// dotSplit returns dotSplitGo's sums; len(v) == len(lo) == len(hi), a
// multiple of 32.
func dotSplit(lo, hi []byte, v []int8) (a, b int32) {
	if !hasVNNI || len(lo) == 0 {
		return dotSplitGo(lo, hi, v)
	}
	_, _ = hi[len(lo)-1], v[len(lo)-1]
	return dotSplitVNNI(&lo[0], &hi[0], &v[0], len(lo))
}

// hammings writes to out[j] the hamming distance of x and the j-th code
// of words words in v, for j < len(out).
func hammings(x, v []uint64, words int, out []uint16) {
	if !hasAVX2 || len(out) == 0 || words == 0 || words%4 != 0 {
		hammingsGo(x, v, words, out)
		return
	}
	_ = x[words-1]
	_ = v[len(out)*words-1]
	hammingsAVX2(&x[0], &v[0], words, len(out), &out[0])
}

var hasAVX2 = cpu.X86.HasAVX2

// hamming is the number of differing bits of two sign codes (the AVX2
// kernel for whole blocks of 4 words, as the sets' codes are).
func hamming(a, b []uint64) int {
	if !hasAVX2 || len(a) == 0 || len(a)%4 != 0 {
		return hammingGo(a, b)
	}
	var out [1]uint16
	hammings(a, b, len(a), out[:])
	return int(out[0])
}

// dot64 is Σ a[i]·b[i] in float64, exactly as dot64Go sums it.
func dot64(a, b []float32) float64 {
	n := len(a) &^ 15
	if !hasAVX2 || n == 0 {
		return dot64Go(a, b)
	}
	_ = b[len(a)-1]
	return dot64Tail(a, b, n, dot64AVX2(&a[0], &b[0], n))
}

// quantI8Fast codes the leading multiple of 8 elements of v as
// quantizeWith does, returning how many it coded and their squared error
// sum (0, 0 without AVX2).
func quantI8Fast(v []float32, dst []int8, k, inv, scale float64) (int, float64) {
	n := len(v) &^ 7
	if !hasAVX2 || n == 0 {
		return 0, 0
	}
	_ = dst[n-1]
	return n, quantI8AVX2(&v[0], &dst[0], n, k, inv, scale)
}

// quantU4Fast codes the full 64-element blocks of v as quantize4With
// does, returning how many blocks it coded and their squared error sum.
func quantU4Fast(v []float32, dst []byte, k, inv, scale float64) (int, float64) {
	b := len(v) / 64
	if !hasAVX2 || b == 0 {
		return 0, 0
	}
	_ = dst[32*b-1]
	return b, quantU4AVX2(&v[0], &dst[0], b, k, inv, scale)
}

// dotI8 returns Σ x[i]·v[i]; len(x) == len(v), a multiple of 32.
func dotI8(x []int16, v []int8) int32 {
	if hasAVX2 && len(x) > 0 {
		_ = v[len(x)-1]
		return dotI16I8AVX2(&x[0], &v[0], len(x))
	}
	return dotI8Go(x, v)
}

// dotU4 returns the nibble product of x and the packed codes v (see
// dotU4Go); len(x) == 2·len(v), len(v) a multiple of 32.
func dotU4(x []int8, v []byte) int32 {
	if hasAVX2 && len(v) > 0 {
		_ = x[2*len(v)-1]
		return dotU4I8AVX2(&x[0], &v[0], len(v))
	}
	return dotU4Go(x, v)
}
