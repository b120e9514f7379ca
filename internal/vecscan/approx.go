package vecscan

import (
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
)

// Approximate ranking for large sets. TopK's first pass reads a code of
// every vector (768 bytes at 1,536 dimensions for the 4-bit code, 1,536
// for the int8 one) and, where similarities crowd, cannot prune with the
// 4-bit intervals, so at a million vectors a search costs ~60 ms of CPU in
// the int8 kernel alone. TopKApprox first ranks every admitted vector by
// the Hamming distance between its sign code and the query's (192 bytes
// at 1,536 dimensions: XOR and POPCNT), keeps the candidates nearest, and
// ranks those as TopK does (int8 intervals, then exact similarity), so its
// answer is the exact top k of the candidates. What it can miss is a
// vector among the true top k whose sign code is farther from the query's
// than the candidates'; its recall against exact ranking is measured, not
// guaranteed (TestTopKApproxRecall; the README's million-chunk runs).

// noHam marks a slot outside the Hamming ranking: not admitted, or a zero
// vector.
const noHam = math.MaxUint16

// hamScratch is TopKApprox's per-slot buffer, reused across searches.
var hamScratch = sync.Pool{New: func() any { return new([]uint16) }}

// hammingsGo is the portable hammings.
func hammingsGo(x, v []uint64, words int, out []uint16) {
	for j := range out {
		out[j] = uint16(hammingGo(x, v[j*words:(j+1)*words]))
	}
}

// hammingGo is the portable hamming.
func hammingGo(a, b []uint64) int {
	b = b[:len(a)]
	h := 0
	for i, x := range a {
		h += bits.OnesCount64(x ^ b[i])
	}
	return h
}

// TopKApprox returns the k vectors most similar to x among the
// candidates: the admitted vectors whose sign codes are nearest to x's,
// at least candidates of them (all those at the cut-off distance). With
// candidates ≤ 0, or no more admitted vectors than that, it is TopK. It
// reports whether every admitted vector was a candidate (the answer is
// then TopK's).
func (vs *Set) TopKApprox(x []float32, admitted []bool, k, candidates, workers int) ([]Scored, bool) {
	n := vs.Len()
	if candidates <= 0 || n <= candidates || k <= 0 {
		return vs.TopK(x, admitted, k, workers), true
	}
	code, xss, xscale, xerr := quantizeQuery(x, vs.stride)
	if xss == 0 {
		return vs.TopK(x, admitted, k, workers), true // every similarity is NaN
	}
	xq := newI8Query(code)
	xb := make([]uint64, vs.words1)
	signCode(x, xb)
	buf := hamScratch.Get().(*[]uint16)
	defer hamScratch.Put(buf)
	if cap(*buf) < n {
		*buf = make([]uint16, n)
	}
	ham := (*buf)[:n]
	chunks := (n + scanChunk - 1) / scanChunk
	workers = max(1, min(workers, chunks))
	hists := make([][]int32, workers)
	nans := make([][]Scored, workers)
	var next atomic.Int64
	w1 := vs.words1
	distBuf := make([][]uint16, workers)
	for w := range distBuf {
		distBuf[w] = make([]uint16, scanChunk)
	}
	parallel(workers, func(w int) {
		hist := make([]int32, vs.dims+1)
		defer func() { hists[w] = hist }()
		dense := true
		for {
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			lo, hi := c*scanChunk, min(n, (c+1)*scanChunk)
			// One pass over the chunk. Where the last chunk's slots were
			// mostly in the ranking, one kernel call first computes every
			// distance of this one; otherwise each admitted slot's is
			// computed alone (a narrow filter).
			var dist []uint16
			if dense {
				dist = distBuf[w][:hi-lo]
				hammings(xb, vs.q1[lo*w1:hi*w1], w1, dist)
			}
			in := 0
			for s := lo; s < hi; s++ {
				if !admitted[vs.ent[s]] {
					ham[s] = noHam
					continue
				}
				if vs.ss[s] == 0 {
					ham[s] = noHam
					nans[w] = append(nans[w], Scored{Slot: int32(s), RID: vs.rid[s], Chunk: vs.chunk[s], Sim: math.NaN()})
					continue
				}
				var h uint16
				if dense {
					h = dist[s-lo]
				} else {
					h = uint16(hamming(vs.q1[s*w1:(s+1)*w1], xb))
				}
				ham[s] = h
				hist[h]++
				in++
			}
			dense = 2*in >= hi-lo
		}
	})
	var nan []Scored
	for _, ns := range nans {
		nan = append(nan, ns...)
	}
	slices.SortFunc(nan, lessScored)
	if len(nan) >= k {
		return nan[:k], true
	}
	want := k - len(nan)
	// The cut-off: the smallest distance within which lie at least
	// candidates vectors (every one, when fewer are admitted). Of the
	// vectors at the cut-off distance, the first in slot order fill the
	// candidates: the distances crowd (an embedding's mean is far from
	// zero, so every code shares its signs), and taking every tie took up
	// to eight times the candidates at a million vectors.
	var admittedN int
	for _, hist := range hists {
		for _, c := range hist {
			admittedN += int(c)
		}
	}
	all := admittedN <= candidates
	cut, atCut := vs.dims, candidates // atCut: how many at the cut-off distance to take
	if !all {
		below := 0
		for h := 0; h <= vs.dims; h++ {
			inBin := 0
			for _, hist := range hists {
				inBin += int(hist[h])
			}
			if below+inBin >= candidates {
				cut, atCut = h, candidates-below
				break
			}
			below += inBin
		}
	}
	cands := make([]int32, 0, min(candidates, admittedN))
	for s, h := range ham {
		switch {
		case int(h) < cut:
			cands = append(cands, int32(s))
		case int(h) == cut && atCut > 0:
			cands = append(cands, int32(s))
			atCut--
		}
	}
	// The int8 interval of each candidate; only those whose upper bound
	// reaches the want-th largest lower bound are ranked exactly.
	lo, hi := make([]float64, len(cands)), make([]float64, len(cands))
	st := vs.stride
	w2 := max(1, min(workers, len(cands)/(4*scanChunk)))
	parallel(w2, func(w int) {
		for i := w * len(cands) / w2; i < (w+1)*len(cands)/w2; i++ {
			s := cands[i]
			a := xscale * vs.scale[s] * float64(xq.dot(vs.q8[int(s)*st:(int(s)+1)*st]))
			b := vs.bound(s, xerr)
			lo[i], hi[i] = a-b, a+b
		}
	})
	h := make(loHeap, 0, want)
	for _, l := range lo {
		h.offer(l, want)
	}
	tau := math.Inf(-1)
	if len(h) == want {
		tau = h[0]
	}
	surv, his := cands[:0], hi[:0]
	for i, s := range cands {
		if hi[i] >= tau {
			surv, his = append(surv, s), append(his, hi[i])
		}
	}
	return append(nan, vs.exactTop(x, xss, surv, his, want, workers)...), all
}
