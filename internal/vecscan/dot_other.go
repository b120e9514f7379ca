//go:build !amd64 || purego

package vecscan

// dot64 is Σ a[i]·b[i] in float64 (see dot64Go).
func dot64(a, b []float32) float64 { return dot64Go(a, b) }

// dotI8 returns Σ x[i]·v[i]; len(x) == len(v), a multiple of 32.
func dotI8(x []int16, v []int8) int32 { return dotI8Go(x, v) }

// hasVNNI: no byte-split kernel here, so queries are not split.
const hasVNNI = false

// dotSplit returns dotSplitGo's sums.
func dotSplit(lo, hi []byte, v []int8) (a, b int32) { return dotSplitGo(lo, hi, v) }

// dotU4 returns the nibble product of x and the packed codes v (see
// dotU4Go); len(x) == 2·len(v), len(v) a multiple of 32.
func dotU4(x []int8, v []byte) int32 { return dotU4Go(x, v) }

func quantI8Fast(v []float32, dst []int8, k, inv, scale float64) (int, float64) { return 0, 0 }

func quantU4Fast(v []float32, dst []byte, k, inv, scale float64) (int, float64) { return 0, 0 }

// hamming is the number of differing bits of two sign codes.
func hamming(a, b []uint64) int { return hammingGo(a, b) }

// hammings writes to out[j] the hamming distance of x and the j-th code
// of words words in v.
func hammings(x, v []uint64, words int, out []uint16) { hammingsGo(x, v, words, out) }
