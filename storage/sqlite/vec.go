package sqlite

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"math"
	"slices"
	"sync"
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

// boundSlack absorbs floating-point rounding in the bound arithmetic.
const boundSlack = 1e-7

// strideOf rounds a dimension up to the int8 kernel's block of 32.
func strideOf(dims int) int { return (dims + 31) &^ 31 }

type vecSet struct {
	dims, stride int

	rid   []int64     // chunk rid per slot
	chunk []uuid.UUID // chunk id per slot
	ent   []int32     // entity slot (space.ents) per slot
	f32   []float32   // dims per slot
	q8    []int8      // stride per slot
	ss    []float64   // squared norm per slot (0: a zero vector)
	scale []float64   // int8 scale of the unit vector
	errb  []float64   // ‖u − scale·q‖

	slot map[int64]int32 // chunk rid → slot
}

func newVecSet(dims int) *vecSet {
	return &vecSet{dims: dims, stride: strideOf(dims), slot: map[int64]int32{}}
}

func (vs *vecSet) len() int { return len(vs.rid) }

// put stores (or replaces) the vector of chunk rid.
func (vs *vecSet) put(rid int64, chunk uuid.UUID, ent int32, v []float32) {
	s, ok := vs.slot[rid]
	if !ok {
		s = int32(len(vs.rid))
		vs.slot[rid] = s
		vs.rid = append(vs.rid, rid)
		vs.chunk = append(vs.chunk, chunk)
		vs.ent = append(vs.ent, ent)
		vs.f32 = append(vs.f32, v...)
		vs.q8 = append(vs.q8, make([]int8, vs.stride)...)
		vs.ss = append(vs.ss, 0)
		vs.scale = append(vs.scale, 0)
		vs.errb = append(vs.errb, 0)
	} else {
		vs.chunk[s], vs.ent[s] = chunk, ent
		copy(vs.f32[int(s)*vs.dims:], v)
	}
	vs.ss[s], vs.scale[s], vs.errb[s] = quantize(v, vs.q8[int(s)*vs.stride:(int(s)+1)*vs.stride])
}

// remove deletes chunk rid's vector, moving the last slot into its place.
func (vs *vecSet) remove(rid int64) bool {
	s, ok := vs.slot[rid]
	if !ok {
		return false
	}
	last := int32(len(vs.rid) - 1)
	if s != last {
		vs.rid[s], vs.chunk[s], vs.ent[s] = vs.rid[last], vs.chunk[last], vs.ent[last]
		copy(vs.f32[int(s)*vs.dims:(int(s)+1)*vs.dims], vs.f32[int(last)*vs.dims:])
		copy(vs.q8[int(s)*vs.stride:(int(s)+1)*vs.stride], vs.q8[int(last)*vs.stride:])
		vs.ss[s], vs.scale[s], vs.errb[s] = vs.ss[last], vs.scale[last], vs.errb[last]
		vs.slot[vs.rid[s]] = s
	}
	delete(vs.slot, rid)
	vs.rid = vs.rid[:last]
	vs.chunk = vs.chunk[:last]
	vs.ent = vs.ent[:last]
	vs.f32 = vs.f32[:int(last)*vs.dims]
	vs.q8 = vs.q8[:int(last)*vs.stride]
	vs.ss = vs.ss[:last]
	vs.scale = vs.scale[:last]
	vs.errb = vs.errb[:last]
	return true
}

func (vs *vecSet) vector(s int32) []float32 {
	return vs.f32[int(s)*vs.dims : (int(s)+1)*vs.dims]
}

// quantize writes the int8 code of v/‖v‖ into dst (zero-padded) and returns
// ‖v‖², the code's scale and the exact norm of its error. Any rounding of
// the code is correct: the error norm is measured on the code produced.
func quantize(v []float32, dst []int8) (ss, scale, errNorm float64) {
	var maxAbs float32
	for _, x := range v {
		ss += float64(x) * float64(x)
		maxAbs = max(maxAbs, x, -x)
	}
	clear(dst[len(v):])
	if ss == 0 {
		clear(dst)
		return 0, 0, 0
	}
	norm := math.Sqrt(ss)
	inv := 1 / norm
	scale = float64(maxAbs) * inv / 127
	k := 127 / float64(maxAbs) // x → code: |x·k| ≤ 127
	dst = dst[:len(v)]
	var e2 float64
	for i, x := range v {
		c := math.Floor(float64(x)*k + 0.5)
		dst[i] = int8(c)
		d := float64(x)*inv - scale*c
		e2 += d * d
	}
	return ss, scale, math.Sqrt(e2)
}

// quantizeQuery is quantize for a query, whose code is int16 for the kernel.
func quantizeQuery(x []float32, stride int) (code []int16, ss, scale, errNorm float64) {
	tmp := make([]int8, stride)
	ss, scale, errNorm = quantize(x, tmp)
	code = make([]int16, stride)
	for i, c := range tmp {
		code[i] = int16(c)
	}
	return code, ss, scale, errNorm
}

// dot64 is Σ a[i]·b[i] accumulated in float64.
func dot64(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return (s0 + s1) + (s2 + s3)
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

// cosine is pgvector's cosine similarity (1 − the <=> distance): NaN when
// either vector is zero, clamped to [−1, 1].
func cosine(x []float32, xss float64, v []float32, vss float64) float64 {
	if xss == 0 || vss == 0 {
		return math.NaN()
	}
	sim := dot64(x, v) / math.Sqrt(xss*vss)
	return max(-1, min(1, sim))
}

// scored is a ranked vector.
type scored struct {
	slot  int32
	rid   int64
	chunk uuid.UUID
	sim   float64 // NaN for a zero vector or query
}

// lessScored orders like PostgreSQL's exact plan, ORDER BY similarity DESC,
// id: NaN sorts above every number (PostgreSQL's float order), then ids
// ascending.
func lessScored(a, b scored) int {
	an, bn := math.IsNaN(a.sim), math.IsNaN(b.sim)
	switch {
	case an && !bn:
		return -1
	case bn && !an:
		return 1
	case !an && a.sim != b.sim:
		if a.sim > b.sim {
			return -1
		}
		return 1
	}
	return bytes.Compare(a.chunk[:], b.chunk[:])
}

// topK returns the k vectors most similar to x among the slots whose entity
// admit admits, ordered as PostgreSQL's exact plan selects them.
func (vs *vecSet) topK(x []float32, admit func(ent int32) bool, k, workers int) []scored {
	n := vs.len()
	if n == 0 || k <= 0 {
		return nil
	}
	code, xss, xscale, xerr := quantizeQuery(x, vs.stride)
	var nan []scored // zero vectors: NaN similarity, selected first
	if xss == 0 {
		for s := range n {
			if admit(vs.ent[s]) {
				nan = append(nan, scored{slot: int32(s), rid: vs.rid[s], chunk: vs.chunk[s], sim: math.NaN()})
			}
		}
		slices.SortFunc(nan, lessScored)
		return nan[:min(k, len(nan))]
	}
	// Pass 1: bounds from the int8 codes, in parallel over slot ranges.
	approx := make([]float64, n) // NaN: not admitted or zero vector
	workers = max(1, min(workers, n/2048+1))
	heaps := make([]loHeap, workers)
	nans := make([][]scored, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := w*n/workers, (w+1)*n/workers
			h := &heaps[w]
			for s := lo; s < hi; s++ {
				if !admit(vs.ent[s]) {
					approx[s] = math.NaN()
					continue
				}
				if vs.ss[s] == 0 {
					approx[s] = math.NaN()
					nans[w] = append(nans[w], scored{slot: int32(s), rid: vs.rid[s], chunk: vs.chunk[s], sim: math.NaN()})
					continue
				}
				a := xscale * vs.scale[s] * float64(dotI8(code, vs.q8[s*vs.stride:(s+1)*vs.stride]))
				approx[s] = a
				lb := a - vs.bound(int32(s), xerr)
				if len(*h) < k {
					heap.Push(h, lb)
				} else if lb > (*h)[0] {
					(*h)[0] = lb
					heap.Fix(h, 0)
				}
			}
		}()
	}
	wg.Wait()
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
	// Pass 2: exact similarity of every slot that may reach τ.
	var cands []int32
	for s, a := range approx {
		if !math.IsNaN(a) && a+vs.bound(int32(s), xerr) >= tau {
			cands = append(cands, int32(s))
		}
	}
	out := make([]scored, len(cands))
	exact := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := cands[i]
			out[i] = scored{slot: s, rid: vs.rid[s], chunk: vs.chunk[s], sim: cosine(x, xss, vs.vector(s), vs.ss[s])}
		}
	}
	if len(cands) < 1024 || workers == 1 {
		exact(0, len(cands))
	} else {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				exact(w*len(cands)/workers, (w+1)*len(cands)/workers)
			}()
		}
		wg.Wait()
	}
	slices.SortFunc(out, lessScored)
	if len(out) > want {
		out = out[:want]
	}
	return append(nan, out...)
}

// bound is the half-width of slot s's similarity interval.
func (vs *vecSet) bound(s int32, xerr float64) float64 {
	return xerr*(1+vs.errb[s]) + vs.errb[s] + boundSlack
}

// similarity is the exact cosine similarity of chunk rid's vector to x.
func (vs *vecSet) similarity(x []float32, xss float64, rid int64) (float64, bool) {
	s, ok := vs.slot[rid]
	if !ok {
		return 0, false
	}
	return cosine(x, xss, vs.vector(s), vs.ss[s]), true
}

// loHeap is a min-heap of lower bounds.
type loHeap []float64

func (h loHeap) Len() int           { return len(h) }
func (h loHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h loHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *loHeap) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *loHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// encodeVector is the stored form of an embedding: float32 little-endian.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// decodeVector appends the floats of a stored embedding to dst.
func decodeVector(b []byte, dst []float32) []float32 {
	n := len(dst)
	dst = slices.Grow(dst, len(b)/4)[:n+len(b)/4]
	decodeVectorInto(b, dst[n:])
	return dst
}

// littleEndian reports whether float32s are stored in memory as on disk.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// decodeVectorInto decodes a stored embedding into dst (len(b)/4 floats).
func decodeVectorInto(b []byte, dst []float32) {
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

func squaredNorm(v []float32) float64 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	return ss
}
