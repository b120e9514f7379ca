//go:build !purego

package sqlite

import "golang.org/x/sys/cpu"

//go:noescape
func dotI16I8AVX2(x *int16, v *int8, n int) int32

var hasAVX2 = cpu.X86.HasAVX2

// dotI8 returns Σ x[i]·v[i]; len(x) == len(v), a multiple of 32.
func dotI8(x []int16, v []int8) int32 {
	if hasAVX2 && len(x) > 0 {
		_ = v[len(x)-1]
		return dotI16I8AVX2(&x[0], &v[0], len(x))
	}
	return dotI8Go(x, v)
}
