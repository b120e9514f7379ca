package vecscan

import "math"

// Half precision: a set made by NewHalf keeps each vector as IEEE 754
// binary16 (2 bytes a dimension instead of 4), and everything it computes —
// the codes, the norms, the exact similarities — is computed on the vector
// as rounded. Its ranking is exact for the rounded vectors; against the
// float32 vectors the rounding moves a cosine by about 2⁻¹¹ relative per
// element at most, so only near-ties can change order (TestHalfRecall
// measures recall@10 against float32 ranking).

// maxHalf is the largest finite binary16 value.
const maxHalf = 65504

// toHalf rounds x to the nearest binary16 (ties to even). Values beyond
// the binary16 range saturate at ±65504 instead of becoming infinite, so
// that an outlier cannot make a vector's norm infinite; NaN stays NaN.
func toHalf(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff && mant != 0: // NaN
		return sign | 0x7e00
	case exp == 0xff || exp-127 > 15: // ±Inf or too large: saturate
		return sign | 0x7bff
	}
	e := exp - 127 + 15
	if e >= 1 {
		// Normal: round the 23-bit mantissa to 10 bits, ties to even,
		// without a branch (adding 0xfff plus the kept part's lowest bit
		// carries exactly when the dropped part is above half, or half
		// with an odd kept part); a carry out of the mantissa raises the
		// exponent, as it should.
		m := mant + 0xfff + (mant>>13)&1
		h := uint32(e)<<10 + m>>13
		if h >= 0x7c00 { // rounded past the largest finite value
			return sign | 0x7bff
		}
		return sign | uint16(h)
	}
	// Subnormal or zero: the value is m·2⁻²⁴ with m = (1.mant)·2^(e+13).
	if e < -10 {
		return sign // below half the smallest subnormal: ±0
	}
	m := mant | 0x800000
	shift := uint32(14 - e) // 24 - 10 + (1 - e) - 1
	h := m >> shift
	rest := m & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rest > half || rest == half && h&1 == 1 {
		h++
	}
	return sign | uint16(h)
}

// fromHalf is the float32 value of a binary16.
func fromHalf(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: mant·2⁻²⁴, exactly representable in float32.
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// encodeHalf writes v rounded to binary16 into dst.
func encodeHalf(v []float32, dst []uint16) {
	dst = dst[:len(v)]
	for i, x := range v {
		dst[i] = toHalf(x)
	}
}

// decodeHalf writes the float32 values of h into dst.
func decodeHalf(h []uint16, dst []float32) {
	dst = dst[:len(h)]
	for i, x := range h {
		dst[i] = fromHalf(x)
	}
}
