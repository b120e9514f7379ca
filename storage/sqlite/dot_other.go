//go:build !amd64 || purego

package sqlite

// dotI8 returns Σ x[i]·v[i]; len(x) == len(v), a multiple of 32.
func dotI8(x []int16, v []int8) int32 { return dotI8Go(x, v) }
