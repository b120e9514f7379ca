package vecscan

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/google/uuid"
)

// A vector set holds one workspace's embeddings of one model, all in
// memory: the float32 vectors for exact ranking, and an int8 code of each
// unit vector (scale s and exact error norm E per vector) that the scan
// reads instead. For a unit query x and stored unit vector u with codes
// x ≈ sx·p and u ≈ su·q:
//
//	|x·u − sx·su·(p·q)| ≤ Ex·(1+Eu) + Eu
//
// so every vector gets an interval that certainly holds its exact cosine.
// The k-th largest lower bound τ is a floor under the k-th exact
// similarity; only vectors whose upper bound reaches τ can be in the top k,
// and those are ranked exactly. The answer equals a full float32 scan's.
//
// A 4-bit code of each vector (half the int8 code's bytes, so half the
// memory traffic of the scan, which memory bandwidth bounds) gives a first,
// wider interval the same way; the int8 intervals are then computed only
// for the vectors whose 4-bit upper bound reaches the 4-bit τ. When the
// 4-bit intervals stop pruning (similarities crowded within their width),
// searches skip that pass for a while.

// boundSlack absorbs floating-point rounding in the bound arithmetic.
const boundSlack = 1e-7

// strideOf rounds a dimension up to the int8 kernel's block of 32.
func strideOf(dims int) int { return (dims + 31) &^ 31 }

// stride4Of is the bytes of a 4-bit code: blocks of 32 bytes, 64 codes.
func stride4Of(dims int) int { return (dims + 63) / 64 * 32 }

type Set struct {
	dims, stride int

	rid   []int64     // chunk rid per slot
	chunk []uuid.UUID // chunk id per slot
	ent   []int32     // entity slot (space.ents) per slot
	f32   []float32   // dims per slot (none in a half-precision set)
	half  bool        // vectors kept as binary16 in f16 (NewHalf)
	f16   []uint16    // dims per slot, in a half-precision set
	q8    []int8      // stride per slot
	ss    []float64   // squared norm per slot (0: a zero vector)
	scale []float64   // int8 scale of the unit vector
	errb  []float64   // ‖u − scale·q‖

	putBuf []float32 // Put's decoded rounded vector (half precision)

	// The 4-bit code: in each block of 32 bytes, byte j holds code c+8 of
	// the unit vector's element 64·block+j in its low nibble and of
	// element 64·block+32+j in its high nibble (c in −7..7, 0 past dims).
	stride4 int
	q4      []byte    // stride4 per slot
	scale4  []float64 // 4-bit scale of the unit vector
	err4    []float64 // ‖u − scale4·c‖

	skip4 atomic.Int32 // searches left that skip the 4-bit pass

	// The sign code: bit i of a slot's words is set when element i of its
	// vector is positive. TopKApprox ranks every vector by the Hamming
	// distance of its code to the query's (a vector of 1,536 dimensions:
	// 24 words, 192 bytes) before ranking the nearest exactly.
	words1 int      // (dims+63)/64 rounded up to a multiple of 4 (the AVX2 kernel's block)
	q1     []uint64 // words1 per slot

	slot    map[int64]int32     // chunk rid → slot
	byChunk map[uuid.UUID]int32 // chunk id → slot

	// The changes since remembered results (cache.go).
	gen     uint64
	log     []int64
	logBase uint64
	cache   topKCache
}

func New(dims int) *Set {
	return &Set{dims: dims, stride: strideOf(dims), stride4: stride4Of(dims), words1: (dims + 255) / 256 * 4,
		slot: map[int64]int32{}, byChunk: map[uuid.UUID]int32{}}
}

// NewHalf returns a set that keeps its vectors in half precision (see
// half.go): 2 bytes a dimension instead of 4, about 5.3 KB less a vector
// of 1,536 dimensions with its codes, for exact ranking of the rounded
// vectors.
func NewHalf(dims int) *Set {
	vs := New(dims)
	vs.half = true
	return vs
}

// Bytes is the memory the set's arrays take (their capacity; the maps
// aside).
func (vs *Set) Bytes() int64 {
	c := int64(cap(vs.rid))*8 + int64(cap(vs.chunk))*16 + int64(cap(vs.ent))*4 +
		int64(cap(vs.f32))*4 + int64(cap(vs.f16))*2 + int64(cap(vs.q8)) + int64(cap(vs.q4)) + int64(cap(vs.q1))*8 +
		int64(cap(vs.ss)+cap(vs.scale)+cap(vs.errb)+cap(vs.scale4)+cap(vs.err4))*8
	return c
}

// Reserve makes room for n vectors, so that a load of a known count
// allocates each array once, at its size, instead of doubling it (which
// held the old and the new arrays at once: at a million vectors of 1,536
// dimensions, 13 GB for a moment).
func (vs *Set) Reserve(n int) { vs.reserve(n) }

// alloc sizes the arrays for n slots.
func (vs *Set) Alloc(n int) {
	vs.noteReset()
	vs.rid = make([]int64, n)
	vs.chunk = make([]uuid.UUID, n)
	vs.ent = make([]int32, n)
	if vs.half {
		vs.f16 = make([]uint16, n*vs.dims)
		adviseHuge(vs.f16)
	} else {
		vs.f32 = make([]float32, n*vs.dims)
	}
	vs.q8 = make([]int8, n*vs.stride)
	vs.q4 = make([]byte, n*vs.stride4)
	vs.q1 = make([]uint64, n*vs.words1)
	adviseHuge(vs.f32)
	adviseHuge(vs.q8)
	adviseHuge(vs.q4)
	vs.ss = make([]float64, n)
	vs.scale = make([]float64, n)
	vs.errb = make([]float64, n)
	vs.scale4 = make([]float64, n)
	vs.err4 = make([]float64, n)
}

func (vs *Set) Len() int { return len(vs.rid) }

// reserve makes room for n slots in every array, so that the appends of
// put stay within capacity. Growing all of them at once by doubling (with
// huge pages advised) copies the vectors less often than append's 1.25×
// steps for large slices, whose fresh pages each faulted in one by one:
// the copies were 3% of the CPU of a REST load that kept storing.
func (vs *Set) reserve(n int) {
	vs.rid = reserve(vs.rid, n)
	vs.chunk = reserve(vs.chunk, n)
	vs.ent = reserve(vs.ent, n)
	if vs.half {
		vs.f16 = reserve(vs.f16, n*vs.dims)
	} else {
		vs.f32 = reserve(vs.f32, n*vs.dims)
	}
	vs.q8 = reserve(vs.q8, n*vs.stride)
	vs.q4 = reserve(vs.q4, n*vs.stride4)
	vs.q1 = reserve(vs.q1, n*vs.words1)
	vs.ss = reserve(vs.ss, n)
	vs.scale = reserve(vs.scale, n)
	vs.errb = reserve(vs.errb, n)
	vs.scale4 = reserve(vs.scale4, n)
	vs.err4 = reserve(vs.err4, n)
}

// reserve returns s with capacity for n elements.
func reserve[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s
	}
	t := make([]T, len(s), n)
	copy(t, s)
	adviseHuge(t[:n])
	return t
}

// put stores (or replaces) the vector of chunk rid.
func (vs *Set) Put(rid int64, chunk uuid.UUID, ent int32, v []float32) {
	vs.noteChange(rid)
	s, ok := vs.slot[rid]
	if !ok {
		s = int32(len(vs.rid))
		if len(vs.rid) == cap(vs.rid) {
			vs.reserve(max(2*len(vs.rid), 64))
		}
		vs.slot[rid] = s
		vs.byChunk[chunk] = s
		vs.rid = append(vs.rid, rid)
		vs.chunk = append(vs.chunk, chunk)
		vs.ent = append(vs.ent, ent)
		if vs.half {
			vs.f16 = append(vs.f16, make([]uint16, vs.dims)...)
		} else {
			vs.f32 = append(vs.f32, make([]float32, vs.dims)...)
		}
		vs.q8 = append(vs.q8, make([]int8, vs.stride)...)
		vs.q4 = append(vs.q4, make([]byte, vs.stride4)...)
		vs.q1 = append(vs.q1, make([]uint64, vs.words1)...)
		vs.ss = append(vs.ss, 0)
		vs.scale = append(vs.scale, 0)
		vs.errb = append(vs.errb, 0)
		vs.scale4 = append(vs.scale4, 0)
		vs.err4 = append(vs.err4, 0)
	} else {
		if vs.chunk[s] != chunk {
			vs.unmapChunk(s)
			vs.byChunk[chunk] = s
		}
		vs.chunk[s], vs.ent[s] = chunk, ent
	}
	if vs.half {
		// Decoded into the set's own buffer (Put has the set to itself; a
		// buffer per call was 11% of a million-chunk load's CPU).
		encodeHalf(v, vs.f16[int(s)*vs.dims:(int(s)+1)*vs.dims])
		vs.putBuf = vs.codeRounded(int(s), vs.putBuf)
		return
	}
	copy(vs.f32[int(s)*vs.dims:(int(s)+1)*vs.dims], v)
	vs.quantizeSlots(int(s), int(s)+1)
}

// remove deletes chunk rid's vector, moving the last slot into its place.
func (vs *Set) Remove(rid int64) bool {
	s, ok := vs.slot[rid]
	if !ok {
		return false
	}
	vs.noteChange(rid)
	last := len(vs.rid) - 1
	vs.unmapChunk(s)
	if int(s) != last {
		moved := vs.chunk[last]
		vs.moveSlot(last, int(s))
		vs.slot[vs.rid[s]] = s
		if vs.byChunk[moved] == int32(last) {
			vs.byChunk[moved] = s
		}
	}
	delete(vs.slot, rid)
	vs.truncate(last)
	return true
}

// unmapChunk forgets the chunk id of slot s unless the id now names
// another slot (a chunk id stored again under a new rid).
func (vs *Set) unmapChunk(s int32) {
	if vs.byChunk[vs.chunk[s]] == s {
		delete(vs.byChunk, vs.chunk[s])
	}
}

// moveSlot copies slot from into slot to (the slot map aside).
func (vs *Set) moveSlot(from, to int) {
	vs.rid[to], vs.chunk[to], vs.ent[to] = vs.rid[from], vs.chunk[from], vs.ent[from]
	if vs.half {
		copy(vs.f16[to*vs.dims:(to+1)*vs.dims], vs.f16[from*vs.dims:(from+1)*vs.dims])
	} else {
		copy(vs.f32[to*vs.dims:(to+1)*vs.dims], vs.f32[from*vs.dims:(from+1)*vs.dims])
	}
	copy(vs.q8[to*vs.stride:(to+1)*vs.stride], vs.q8[from*vs.stride:(from+1)*vs.stride])
	copy(vs.q4[to*vs.stride4:(to+1)*vs.stride4], vs.q4[from*vs.stride4:(from+1)*vs.stride4])
	copy(vs.q1[to*vs.words1:(to+1)*vs.words1], vs.q1[from*vs.words1:(from+1)*vs.words1])
	vs.ss[to], vs.scale[to], vs.errb[to] = vs.ss[from], vs.scale[from], vs.errb[from]
	vs.scale4[to], vs.err4[to] = vs.scale4[from], vs.err4[from]
}

// truncate keeps the first n slots (the slot map aside).
func (vs *Set) truncate(n int) {
	vs.rid, vs.chunk, vs.ent = vs.rid[:n], vs.chunk[:n], vs.ent[:n]
	if vs.half {
		vs.f16 = vs.f16[:n*vs.dims]
	} else {
		vs.f32 = vs.f32[:n*vs.dims]
	}
	vs.q8, vs.q4, vs.q1 = vs.q8[:n*vs.stride], vs.q4[:n*vs.stride4], vs.q1[:n*vs.words1]
	vs.ss, vs.scale, vs.errb = vs.ss[:n], vs.scale[:n], vs.errb[:n]
	vs.scale4, vs.err4 = vs.scale4[:n], vs.err4[:n]
}

// vectorInto returns slot s's vector: a view of the set's own floats, or,
// in a half-precision set, the vector decoded into buf (grown as needed).
func (vs *Set) vectorInto(s int32, buf []float32) []float32 {
	lo, hi := int(s)*vs.dims, (int(s)+1)*vs.dims
	if !vs.half {
		return vs.f32[lo:hi]
	}
	buf = slices.Grow(buf[:0], vs.dims)[:vs.dims]
	decodeHalf(vs.f16[lo:hi], buf)
	return buf
}

// quantize writes the int8 code of v/‖v‖ into dst (zero-padded) and returns
// ‖v‖², the code's scale and the exact norm of its error. Any rounding of
// the code is correct: the error norm is measured on the code produced.
func quantize(v []float32, dst []int8) (ss, scale, errNorm float64) {
	ss, maxBits := normMax(v)
	scale, errNorm = quantizeWith(v, dst, ss, math.Float32frombits(maxBits))
	return ss, scale, errNorm
}

// normMax returns ‖v‖² (a sequential float64 sum) and the bits of
// max |v[i]| (absBits).
func normMax(v []float32) (ss float64, maxBits uint32) {
	for _, x := range v {
		ss += float64(x) * float64(x)
		maxBits = max(maxBits, absBits(x))
	}
	return ss, maxBits
}

// codeRounded writes the codes of slot s of a half-precision set, computed
// on its rounded vector, which it decodes into buf (grown as needed) and
// returns.
func (vs *Set) codeRounded(s int, buf []float32) []float32 {
	v := vs.vectorInto(int32(s), buf)
	ss, m := normMax(v)
	vs.codeVector(s, v, ss, m)
	return v
}

// absBits is the bit pattern of |x|. For non-negative floats the patterns
// order as the values, and a NaN's exceeds +Inf's, so the largest of them
// is max(|x|) with NaN winning, as the float max gives, without its
// branches (which were most of quantize's time).
func absBits(x float32) uint32 { return math.Float32bits(x) &^ (1 << 31) }

// quantizeWith is quantize given ‖v‖² and max |v[i]|.
func quantizeWith(v []float32, dst []int8, ss float64, maxAbs float32) (scale, errNorm float64) {
	clear(dst[len(v):])
	if ss == 0 {
		clear(dst)
		return 0, 0
	}
	norm := math.Sqrt(ss)
	inv := 1 / norm
	scale = float64(maxAbs) * inv / 127
	k := 127 / float64(maxAbs) // x → code: |x·k| ≤ 127
	dst = dst[:len(v)]
	i, e0 := quantI8Fast(v, dst, k, inv, scale)
	var e1 float64
	for ; i+2 <= len(v); i += 2 {
		x0, x1 := float64(v[i]), float64(v[i+1])
		c0, c1 := math.Floor(x0*k+0.5), math.Floor(x1*k+0.5)
		dst[i], dst[i+1] = int8(c0), int8(c1)
		d0, d1 := x0*inv-scale*c0, x1*inv-scale*c1
		e0 += d0 * d0
		e1 += d1 * d1
	}
	for ; i < len(v); i++ {
		x := float64(v[i])
		c := math.Floor(x*k + 0.5)
		dst[i] = int8(c)
		d := x*inv - scale*c
		e0 += d * d
	}
	return scale, math.Sqrt(e0 + e1)
}

// quantizeSlots quantizes slots [lo, hi) of vs. It computes the squared
// norms of four vectors at a time: each is the same sequential float64 sum
// as quantize's (so bit for bit the same norm), but four independent sums
// keep the floating-point adder busy instead of waiting on one.
func (vs *Set) QuantizeSlots(lo, hi int) {
	vs.noteReset() // a bulk load's: no remembered result survives it
	vs.quantizeSlots(lo, hi)
}

func (vs *Set) quantizeSlots(lo, hi int) {
	d := vs.dims
	s := lo
	if vs.half {
		// One at a time, on the rounded vector (the same sum as below).
		var buf []float32
		for ; s < hi; s++ {
			buf = vs.codeRounded(s, buf)
		}
		return
	}
	for ; s+4 <= hi; s += 4 {
		v0 := vs.f32[s*d : (s+1)*d]
		v1 := vs.f32[(s+1)*d : (s+2)*d][:len(v0)]
		v2 := vs.f32[(s+2)*d : (s+3)*d][:len(v0)]
		v3 := vs.f32[(s+3)*d : (s+4)*d][:len(v0)]
		var s0, s1, s2, s3 float64
		var m0, m1, m2, m3 uint32
		for i, x := range v0 {
			y, z, w := v1[i], v2[i], v3[i]
			s0 += float64(x) * float64(x)
			s1 += float64(y) * float64(y)
			s2 += float64(z) * float64(z)
			s3 += float64(w) * float64(w)
			m0 = max(m0, absBits(x))
			m1 = max(m1, absBits(y))
			m2 = max(m2, absBits(z))
			m3 = max(m3, absBits(w))
		}
		vs.codeSlot(s, s0, m0)
		vs.codeSlot(s+1, s1, m1)
		vs.codeSlot(s+2, s2, m2)
		vs.codeSlot(s+3, s3, m3)
	}
	for ; s < hi; s++ {
		ss, m := normMax(vs.f32[s*d : (s+1)*d])
		vs.codeSlot(s, ss, m)
	}
}

// codeSlot writes slot s's codes given its squared norm and max |v[i]| bits.
func (vs *Set) codeSlot(s int, ss float64, maxBits uint32) {
	vs.codeVector(s, vs.f32[s*vs.dims:(s+1)*vs.dims], ss, maxBits)
}

// codeVector writes slot s's codes of its vector v.
func (vs *Set) codeVector(s int, v []float32, ss float64, maxBits uint32) {
	maxAbs := math.Float32frombits(maxBits)
	vs.ss[s] = ss
	vs.scale[s], vs.errb[s] = quantizeWith(v, vs.q8[s*vs.stride:(s+1)*vs.stride], ss, maxAbs)
	vs.scale4[s], vs.err4[s] = quantize4With(v, vs.q4[s*vs.stride4:(s+1)*vs.stride4], ss, maxAbs)
	signCode(v, vs.q1[s*vs.words1:(s+1)*vs.words1])
}

// signCode writes v's sign code into dst (len(v)+63)/64 words): bit i is
// set when v[i] > 0. Branch-free (the signs of an embedding are a coin
// toss to the branch predictor: the branchy loop was 7% of a
// million-chunk load's CPU); v holds no NaN (pgvector refuses them).
func signCode(v []float32, dst []uint64) {
	clear(dst)
	for w := range dst {
		lo := w * 64
		if lo >= len(v) {
			break
		}
		var word uint64
		for j, x := range v[lo:min(lo+64, len(v))] {
			b := math.Float32bits(x)
			// 1 when the sign bit is clear and the magnitude is not zero.
			pos := (b>>31 ^ 1) & ((b&0x7fffffff + 0x7fffffff) >> 31)
			word |= uint64(pos) << j
		}
		dst[w] = word
	}
}

// quantize4With writes the 4-bit code of v/‖v‖ into dst (layout: see
// Set.q4) given ‖v‖² and max |v[i]|, and returns the code's scale and
// the exact norm of its error.
func quantize4With(v []float32, dst []byte, ss float64, maxAbs float32) (scale, errNorm float64) {
	if ss == 0 {
		for i := range dst {
			dst[i] = 0x88
		}
		return 0, 0
	}
	inv := 1 / math.Sqrt(ss)
	scale = float64(maxAbs) * inv / 7
	k := 7 / float64(maxAbs) // x → code: |x·k| ≤ 7
	b0, e0 := quantU4Fast(v, dst, k, inv, scale)
	var e1 float64
	n := len(v)
	for b := b0; b < len(dst)/32; b++ {
		blk := dst[b*32 : b*32+32]
		for j := range blk {
			lo, hi := 8, 8
			if i := 64*b + j; i < n {
				x := float64(v[i])
				c := math.Floor(x*k + 0.5)
				lo = int(c) + 8
				d := x*inv - scale*c
				e0 += d * d
			}
			if i := 64*b + 32 + j; i < n {
				x := float64(v[i])
				c := math.Floor(x*k + 0.5)
				hi = int(c) + 8
				d := x*inv - scale*c
				e1 += d * d
			}
			blk[j] = byte(lo&15 | (hi&15)<<4)
		}
	}
	return scale, math.Sqrt(e0 + e1)
}

// dotU4Go is the portable 4-bit kernel: Σ over byte j of each 32-byte
// block b of v of lo(j)·x[64b+j] + hi(j)·x[64b+32+j], the nibbles taken
// as 0..15 (so the codes' dot product is this less 8·Σx).
func dotU4Go(x []int8, v []byte) int32 {
	x = x[:2*len(v)]
	var sum int32
	for b := 0; b < len(v)/32; b++ {
		blk, xs := v[b*32:b*32+32], x[b*64:b*64+64]
		for j, c := range blk {
			sum += int32(c&15)*int32(xs[j]) + int32(c>>4)*int32(xs[32+j])
		}
	}
	return sum
}

// quantizeQuery is quantize for a query, whose code is int16 for the
// kernel: with up to 32,767 levels instead of 127 its error is a few
// hundred times smaller, which halves every similarity interval (the
// bound is dominated by the stored vector's error then) and so the vectors
// ranked exactly. The levels are capped so that no partial sum of the
// kernel's int32 lanes can overflow: |Σ p[i]·q[i]| ≤ 127·Σ|p[i]|, kept
// below 2³¹.
func quantizeQuery(x []float32, stride int) (code []int16, ss, scale, errNorm float64) {
	var maxBits uint32
	var l1 float64
	for _, v := range x {
		ss += float64(v) * float64(v)
		maxBits = max(maxBits, absBits(v))
		l1 += float64(math.Abs(float64(v)))
	}
	code = make([]int16, stride)
	if ss == 0 {
		return code, 0, 0, 0
	}
	maxAbs := float64(math.Float32frombits(maxBits))
	// Σ|p[i]| ≤ levels·l1/maxAbs + len(x)/2; keep 127 times that below
	// 2³¹ with a margin for the rounding of this arithmetic.
	levels := math.Floor(min(32767, (float64(math.MaxInt32)/127-float64(len(x))-1024)*maxAbs/l1))
	levels = max(1, levels)
	inv := 1 / math.Sqrt(ss)
	scale = maxAbs * inv / levels
	k := levels / maxAbs
	var e0, e1 float64
	i := 0
	for ; i+2 <= len(x); i += 2 {
		x0, x1 := float64(x[i]), float64(x[i+1])
		c0, c1 := math.Floor(x0*k+0.5), math.Floor(x1*k+0.5)
		code[i], code[i+1] = int16(c0), int16(c1)
		d0, d1 := x0*inv-scale*c0, x1*inv-scale*c1
		e0 += d0 * d0
		e1 += d1 * d1
	}
	for ; i < len(x); i++ {
		v := float64(x[i])
		c := math.Floor(v*k + 0.5)
		code[i] = int16(c)
		d := v*inv - scale*c
		e0 += d * d
	}
	return code, ss, scale, math.Sqrt(e0 + e1)
}

// dot64Go is the portable dot64: Σ a[i]·b[i] in float64, each product
// rounded before it is added (as the AVX2 kernel adds), in sixteen
// accumulators (element i of every block of sixteen goes to accumulator
// i), reduced pairwise, then the elements past the last block in turn. The
// AVX2 kernel computes the same sums in the same order, so both give the
// same bits.
func dot64Go(a, b []float32) float64 {
	b = b[:len(a)]
	var acc [16]float64
	i := 0
	for ; i+16 <= len(a); i += 16 {
		for j := range acc {
			acc[j] += float64(float64(a[i+j]) * float64(b[i+j]))
		}
	}
	var s float64
	if i > 0 {
		var r [4]float64
		for j := range r {
			r[j] = (acc[j] + acc[4+j]) + (acc[8+j] + acc[12+j])
		}
		s = (r[0] + r[1]) + (r[2] + r[3])
	}
	return dot64Tail(a, b, i, s)
}

// dot64Tail adds the products of a and b from element i on to s, in turn.
func dot64Tail(a, b []float32, i int, s float64) float64 {
	for ; i < len(a); i++ {
		s += float64(float64(a[i]) * float64(b[i]))
	}
	return s
}

// dotI8Go is the portable int8 kernel.
func dotI8Go(x []int16, v []int8) int32 {
	v = v[:len(x)]
	var s0, s1, s2, s3 int32
	for i := 0; i+4 <= len(x); i += 4 {
		s0 += int32(x[i]) * int32(v[i])
		s1 += int32(x[i+1]) * int32(v[i+1])
		s2 += int32(x[i+2]) * int32(v[i+2])
		s3 += int32(x[i+3]) * int32(v[i+3])
	}
	return s0 + s1 + s2 + s3
}

// i8Query is a query's int16 code (quantizeQuery) as the int8 pass reads
// it. Where the CPU has AVX-512 VNNI the code is also split into bytes,
// x[i] = 256·hi[i] + lo[i], so that the pass multiplies bytes by bytes
// (dotSplit: three instructions per 64 elements instead of six per 32);
// the sum is the same integer either way.
type i8Query struct {
	x      []int16
	lo, hi []byte
	hiSum  int64 // Σ hi[i]
}

func newI8Query(x []int16) i8Query {
	q := i8Query{x: x}
	if !hasVNNI || len(x) == 0 {
		return q
	}
	buf := make([]byte, 2*len(x))
	q.lo, q.hi = buf[:len(x)], buf[len(x):]
	for i, c := range x {
		q.lo[i], q.hi[i] = byte(c), byte(c>>8)
		q.hiSum += int64(c >> 8)
	}
	return q
}

// dot returns Σ x[i]·v[i] (dotI8); len(v) == len(x).
func (q *i8Query) dot(v []int8) int32 {
	if q.lo == nil {
		return dotI8(q.x, v)
	}
	a, b := dotSplit(q.lo, q.hi, v)
	// a counts each hi[i] 128 times too many (v[i]+128); the true sum
	// fits int32 (quantizeQuery caps the levels), the parts in int64.
	return int32(256*(int64(a)-128*q.hiSum) + int64(b))
}

// dotSplitGo is the portable dotSplit: a = Σ hi[i]·(v[i]+128) with hi
// signed, b = Σ lo[i]·v[i] with lo unsigned.
func dotSplitGo(lo, hi []byte, v []int8) (a, b int32) {
	v = v[:len(lo)]
	hi = hi[:len(lo)]
	for i, l := range lo {
		a += int32(int8(hi[i])) * (int32(v[i]) + 128)
		b += int32(l) * int32(v[i])
	}
	return a, b
}

// cosine is pgvector's cosine similarity (1 − the <=> distance): NaN when
// either vector is zero, clamped to [−1, 1].
func cosine(x []float32, xss float64, v []float32, vss float64) float64 {
	if xss == 0 || vss == 0 {
		return math.NaN()
	}
	sim := dot64(x, v) / math.Sqrt(xss*vss)
	return max(-1, min(1, sim))
}

// Scored is a ranked vector.
type Scored struct {
	Slot  int32     // the vector's slot in the set
	RID   int64     // the caller's row id of the chunk
	Chunk uuid.UUID // the chunk's id
	Sim   float64   // cosine similarity; NaN for a zero vector or query
}

// lessScored orders like PostgreSQL's exact plan, ORDER BY similarity DESC,
// id: NaN sorts above every number (PostgreSQL's float order), then ids
// ascending.
func lessScored(a, b Scored) int {
	an, bn := math.IsNaN(a.Sim), math.IsNaN(b.Sim)
	switch {
	case an && !bn:
		return -1
	case bn && !an:
		return 1
	case !an && a.Sim != b.Sim:
		if a.Sim > b.Sim {
			return -1
		}
		return 1
	}
	return bytes.Compare(a.Chunk[:], b.Chunk[:])
}

// scanChunk is the slots a scan worker takes at a time: workers take
// chunks until none is left, so one that the operating system preempts
// delays the search by a chunk, not by its share of the set.
const scanChunk = 1024

// scratch is a search's per-slot buffer, reused across searches.
var scratch = sync.Pool{New: func() any { return new([]float64) }}

// topK returns the k vectors most similar to x among the slots whose
// entity is admitted (admitted[vs.ent[s]]), ordered as PostgreSQL's exact
// plan selects them.
func (vs *Set) TopK(x []float32, admitted []bool, k, workers int) []Scored {
	n := vs.Len()
	if n == 0 || k <= 0 {
		return nil
	}
	code, xss, xscale, xerr := quantizeQuery(x, vs.stride)
	var nan []Scored // zero vectors: NaN similarity, selected first
	if xss == 0 {
		for s := range n {
			if admitted[vs.ent[s]] {
				nan = append(nan, Scored{Slot: int32(s), RID: vs.rid[s], Chunk: vs.chunk[s], Sim: math.NaN()})
			}
		}
		slices.SortFunc(nan, lessScored)
		return nan[:min(k, len(nan))]
	}
	xq := newI8Query(code)
	use4 := vs.skip4.Load() <= 0
	if !use4 {
		vs.skip4.Add(-1)
	}
	var code4 []int8
	var x4scale, x4err float64
	var x4sum int32
	if use4 {
		code4 = make([]int8, 2*vs.stride4)
		_, x4scale, x4err = quantize(x, code4)
		for _, c := range code4 {
			x4sum += int32(c)
		}
	}
	// Pass 1: bounds from the 4-bit (or int8) codes, in parallel over
	// chunks of slots.
	buf := scratch.Get().(*[]float64)
	defer scratch.Put(buf)
	if cap(*buf) < n {
		*buf = make([]float64, n)
	}
	approx := (*buf)[:n] // NaN: not admitted or zero vector
	chunks := (n + scanChunk - 1) / scanChunk
	workers = max(1, min(workers, chunks))
	heaps := make([]loHeap, workers)
	nans := make([][]Scored, workers)
	var next atomic.Int64
	st, st4 := vs.stride, vs.stride4
	scan := func(w int) {
		h := make(loHeap, 0, min(k, n))
		defer func() { heaps[w] = h }()
		for {
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			for s := c * scanChunk; s < min(n, (c+1)*scanChunk); s++ {
				if !admitted[vs.ent[s]] {
					approx[s] = math.NaN()
					continue
				}
				if vs.ss[s] == 0 {
					approx[s] = math.NaN()
					nans[w] = append(nans[w], Scored{Slot: int32(s), RID: vs.rid[s], Chunk: vs.chunk[s], Sim: math.NaN()})
					continue
				}
				var a, b float64
				if use4 {
					a = x4scale * vs.scale4[s] * float64(dotU4(code4, vs.q4[s*st4:(s+1)*st4])-8*x4sum)
					b = vs.bound4(s, x4err)
				} else {
					a = xscale * vs.scale[s] * float64(xq.dot(vs.q8[s*st:(s+1)*st]))
					b = vs.bound(int32(s), xerr)
				}
				approx[s] = a
				h.offer(a-b, k)
			}
		}
	}
	parallel(workers, scan)
	for _, ns := range nans {
		nan = append(nan, ns...)
	}
	slices.SortFunc(nan, lessScored)
	if len(nan) >= k {
		return nan[:k]
	}
	want := k - len(nan)
	// τ: the want-th largest lower bound overall.
	var all []float64
	for _, h := range heaps {
		all = append(all, h...)
	}
	tau := math.Inf(-1)
	if len(all) >= want {
		slices.Sort(all)
		tau = all[len(all)-want]
	}
	var cands []int32
	var his []float64 // their upper bounds
	if use4 {
		// Pass 2: int8 intervals of the slots that may reach τ, each
		// intersected with the 4-bit one.
		var surv []int32
		admittedN := 0
		for s, a := range approx {
			if !math.IsNaN(a) {
				admittedN++
				if a+vs.bound4(s, x4err) >= tau {
					surv = append(surv, int32(s))
				}
			}
		}
		if 2*len(surv) > admittedN {
			// The 4-bit pass pruned less than half: skip it for a while.
			// (Whatever the set's size: at 3,000 vectors of 1,536
			// dimensions whose similarities crowd, it kept 99.8% and cost
			// a fifth of the int8 pass it was meant to spare.)
			vs.skip4.Store(skip4Searches)
		}
		lo, hi := make([]float64, len(surv)), make([]float64, len(surv))
		w2 := max(1, min(workers, len(surv)/(4*scanChunk)))
		parallel(w2, func(w int) {
			for i := w * len(surv) / w2; i < (w+1)*len(surv)/w2; i++ {
				s := int(surv[i])
				a4, b4 := approx[s], vs.bound4(s, x4err)
				a8 := xscale * vs.scale[s] * float64(xq.dot(vs.q8[s*st:(s+1)*st]))
				b8 := vs.bound(int32(s), xerr)
				lo[i], hi[i] = max(a4-b4, a8-b8), min(a4+b4, a8+b8)
			}
		})
		h := make(loHeap, 0, want)
		for _, l := range lo {
			h.offer(l, want)
		}
		if len(h) == want {
			tau = max(tau, h[0])
		}
		for i, s := range surv {
			if hi[i] >= tau {
				cands, his = append(cands, s), append(his, hi[i])
			}
		}
	} else {
		for s, a := range approx {
			if hi := a + vs.bound(int32(s), xerr); !math.IsNaN(a) && hi >= tau {
				cands, his = append(cands, int32(s)), append(his, hi)
			}
		}
	}
	// Pass 3: exact similarity of the slots that may reach τ.
	return append(nan, vs.exactTop(x, xss, cands, his, want, workers)...)
}

// exactTop ranks slots cands exactly and returns the first want. his[i]
// is an upper bound of cands[i]'s similarity: the slots are ranked in
// order of falling bound, and once want are ranked, those whose bound is
// below the want-th best similarity cannot enter and are not ranked (at
// 2,000–8,000 crowded vectors about half of the candidates were ranked for
// nothing). The result is the same: a slot left out has a similarity below
// the want-th, so it could not even tie with it.
func (vs *Set) exactTop(x []float32, xss float64, cands []int32, his []float64, want, workers int) []Scored {
	order := make([]int32, len(cands))
	for i := range order {
		order[i] = int32(i)
	}
	if len(cands) > want {
		slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(his[b], his[a]) })
	}
	out := make([]Scored, 0, min(len(cands), 2*want+16))
	exact := func(dst []Scored, from []int32) {
		var buf []float32 // a half-precision set's decoded vector
		for i, c := range from {
			s := cands[c]
			v := vs.vectorInto(s, buf)
			buf = v
			dst[i] = Scored{Slot: s, RID: vs.rid[s], Chunk: vs.chunk[s], Sim: cosine(x, xss, v, vs.ss[s])}
		}
	}
	h := make(loHeap, 0, want)
	for i, batch := 0, max(want, 1); i < len(order); {
		if want > 0 && len(h) == want && his[order[i]] < h[0] {
			break // every slot left has a bound below the want-th similarity
		}
		next := order[i:min(len(order), i+batch)]
		at := len(out)
		out = slices.Grow(out, len(next))[:at+len(next)]
		w3 := workers
		if len(next) < 1024 {
			w3 = 1
		}
		parallel(w3, func(w int) {
			lo, hi := w*len(next)/w3, (w+1)*len(next)/w3
			exact(out[at+lo:at+hi], next[lo:hi])
		})
		for _, r := range out[at:] {
			h.offer(r.Sim, want)
		}
		i += len(next)
		batch = max(16, min(len(order)-i, want/4))
	}
	slices.SortFunc(out, lessScored)
	if len(out) > want {
		out = out[:want]
	}
	return out
}

// skip4Searches is how many searches skip the 4-bit pass after it failed
// to prune half of the vectors.
const skip4Searches = 32

// parallel runs fn(0..workers-1), fn(0) on the calling goroutine.
func parallel(workers int, fn func(w int)) {
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w)
		}()
	}
	fn(0)
	wg.Wait()
}

// bound4 is the half-width of slot s's 4-bit similarity interval.
func (vs *Set) bound4(s int, xerr float64) float64 {
	return xerr*(1+vs.err4[s]) + vs.err4[s] + boundSlack
}

// bound is the half-width of slot s's similarity interval.
func (vs *Set) bound(s int32, xerr float64) float64 {
	return xerr*(1+vs.errb[s]) + vs.errb[s] + boundSlack
}

// similarity is the exact cosine similarity of chunk rid's vector to x.
func (vs *Set) Similarity(x []float32, xss float64, rid int64) (float64, bool) {
	s, ok := vs.slot[rid]
	if !ok {
		return 0, false
	}
	return cosine(x, xss, vs.vectorInto(s, nil), vs.ss[s]), true
}

// similarityOf is similarity for the chunk with this id.
func (vs *Set) SimilarityOf(x []float32, xss float64, chunk uuid.UUID) (float64, bool) {
	s, ok := vs.byChunk[chunk]
	if !ok {
		return 0, false
	}
	return cosine(x, xss, vs.vectorInto(s, nil), vs.ss[s]), true
}

// loHeap is a min-heap of lower bounds.
type loHeap []float64

// offer keeps the k largest values offered.
func (h *loHeap) offer(v float64, k int) {
	x := *h
	if len(x) < k {
		x = append(x, v)
		for i := len(x) - 1; i > 0; {
			p := (i - 1) / 2
			if !(x[i] < x[p]) {
				break
			}
			x[i], x[p] = x[p], x[i]
			i = p
		}
		*h = x
		return
	}
	if !(v > x[0]) {
		return
	}
	x[0] = v
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(x) && x[l] < x[m] {
			m = l
		}
		if r := l + 1; r < len(x) && x[r] < x[m] {
			m = r
		}
		if m == i {
			return
		}
		x[i], x[m] = x[m], x[i]
		i = m
	}
}

// EncodeVector is the stored form of an embedding: float32 little-endian.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeVector appends the floats of a stored embedding to dst.
func DecodeVector(b []byte, dst []float32) []float32 {
	n := len(dst)
	dst = slices.Grow(dst, len(b)/4)[:n+len(b)/4]
	DecodeVectorInto(b, dst[n:])
	return dst
}

// littleEndian reports whether float32s are stored in memory as on disk.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// DecodeVectorInto decodes a stored embedding into dst (len(b)/4 floats).
func DecodeVectorInto(b []byte, dst []float32) {
	n := len(b) / 4
	if n == 0 {
		return
	}
	dst = dst[:n]
	if littleEndian {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*n), b)
		return
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

func SquaredNorm(v []float32) float64 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	return ss
}

// Dims is the number of dimensions of the set's vectors.
func (vs *Set) Dims() int { return vs.dims }

// Fill stores, at slot s of a set sized by Alloc, chunk rid's id and its
// vector, given as Dims little-endian float32 values (EncodeVector's form).
// The slot's codes are computed later, by QuantizeSlots; slots are indexed
// by rid and chunk only by Compact.
func (vs *Set) Fill(s int, rid int64, chunk uuid.UUID, blob []byte) {
	vs.noteReset()
	vs.rid[s], vs.chunk[s] = rid, chunk
	if vs.half {
		v := make([]float32, vs.dims)
		DecodeVectorInto(blob, v)
		encodeHalf(v, vs.f16[s*vs.dims:(s+1)*vs.dims])
		return
	}
	DecodeVectorInto(blob, vs.f32[s*vs.dims:(s+1)*vs.dims])
}

// Compact finishes a bulk load (Alloc, Fill, QuantizeSlots): it keeps, in
// order, the slots for which keep returns true, with the entity slot keep
// returns for each, drops the others, and indexes the kept slots by rid and
// chunk. It returns the kept rids.
func (vs *Set) Compact(keep func(s int) (ent int32, ok bool)) []int64 {
	vs.noteReset()
	w := 0
	for s := range vs.Len() {
		ent, ok := keep(s)
		if !ok {
			continue
		}
		if w != s {
			vs.moveSlot(s, w)
		}
		vs.ent[w] = ent
		w++
	}
	vs.truncate(w)
	vs.slot = make(map[int64]int32, w)
	vs.byChunk = make(map[uuid.UUID]int32, w)
	for s, rid := range vs.rid {
		vs.slot[rid] = int32(s)
		vs.byChunk[vs.chunk[s]] = int32(s)
	}
	return vs.rid
}

// CompareDistance orders two hits as PostgreSQL's exact vector query does,
// ORDER BY cosine distance, chunk id: by distance ascending, NaN distances
// last, then by chunk id.
func CompareDistance(adist float64, a uuid.UUID, bdist float64, b uuid.UUID) int {
	an, bn := math.IsNaN(adist), math.IsNaN(bdist)
	switch {
	case an != bn:
		if an {
			return 1
		}
		return -1
	case !an && adist != bdist:
		if adist < bdist {
			return -1
		}
		return 1
	}
	return bytes.Compare(a[:], b[:])
}
