// Package postgramtest provides test doubles for postgram: a deterministic,
// offline Embedder whose vectors carry enough meaning for hybrid-search
// tests, with knobs to inject latency and failures and counters to observe
// how it was called.
package postgramtest

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/postgram-go/postgram"
)

// Feature weights. A word contributes a random ±1 vector of weight
// wordWeight; its character trigrams together contribute trigramWeight, so
// texts that share only word fragments ("embedding", "embeddings") still
// score some similarity.
const (
	wordWeight    = 1.0
	trigramWeight = 0.7
)

// Embedder is a deterministic postgram.Embedder that needs no network.
//
// Each lowercase word (a run of Unicode letters and digits) adds a
// pseudo-random ±1 vector seeded by the word's FNV-64a hash; the word's
// character trigrams add smaller pseudo-random vectors; the sum is
// L2-normalised. The same text therefore always gets the same vector, texts
// that share words have a clearly higher cosine similarity than unrelated
// texts, and partial word overlaps score a little. A text without words maps
// to a fixed unit vector.
//
// The vectors depend only on the text and the dimension count, so they are
// stable across runs, processes and platforms.
//
// All methods are safe for concurrent use.
type Embedder struct {
	dims     int
	delay    atomic.Int64 // time.Duration
	maxBatch atomic.Int64
	calls    atomic.Int64
	texts    atomic.Int64

	mu   sync.RWMutex
	fail error
}

// NewEmbedder returns an Embedder producing vectors of length dims. If dims
// is not positive, every EmbedBatch call fails with an error wrapping
// postgram.ErrInvalidArgument.
func NewEmbedder(dims int) *Embedder {
	return &Embedder{dims: dims}
}

// Model returns {Provider: "test", Name: "deterministic-v1", Dimensions: dims}.
func (e *Embedder) Model() postgram.ModelInfo {
	return postgram.ModelInfo{Provider: "test", Name: "deterministic-v1", Dimensions: e.dims}
}

// SetDelay makes every subsequent EmbedBatch call wait d before answering
// (or until its context ends). Zero or negative removes the delay.
func (e *Embedder) SetDelay(d time.Duration) { e.delay.Store(int64(max(d, 0))) }

// Delay returns the delay set by SetDelay.
func (e *Embedder) Delay() time.Duration { return time.Duration(e.delay.Load()) }

// Fail makes every subsequent EmbedBatch call return err unchanged (after
// the delay), e.g. fmt.Errorf("provider down: %w", postgram.ErrUnavailable).
// Fail(nil) is the same as Recover.
func (e *Embedder) Fail(err error) {
	e.mu.Lock()
	e.fail = err
	e.mu.Unlock()
}

// Recover undoes Fail: calls succeed again.
func (e *Embedder) Recover() { e.Fail(nil) }

// SetMaxBatch sets the value reported by MaxBatch and makes EmbedBatch
// reject larger batches with an error wrapping postgram.ErrEmbeddingFailed,
// so tests can check that callers honour postgram.MaxBatcher. Zero or
// negative removes the limit.
func (e *Embedder) SetMaxBatch(n int) { e.maxBatch.Store(int64(max(n, 0))) }

// MaxBatch implements postgram.MaxBatcher. It returns the limit set by
// SetMaxBatch, or DefaultMaxBatch when none is set (in which case EmbedBatch
// does not enforce it).
func (e *Embedder) MaxBatch() int {
	if n := e.maxBatch.Load(); n > 0 {
		return int(n)
	}
	return DefaultMaxBatch
}

// DefaultMaxBatch is what MaxBatch reports when SetMaxBatch was not called.
const DefaultMaxBatch = 256

// Calls returns how many times EmbedBatch has been called, including calls
// that failed or had no texts.
func (e *Embedder) Calls() int64 { return e.calls.Load() }

// Texts returns the total number of texts passed to EmbedBatch, including
// those of calls that failed.
func (e *Embedder) Texts() int64 { return e.texts.Load() }

// EmbedBatch returns one unit vector per text, in input order. It first
// waits for the configured delay (returning early with an error wrapping
// postgram.ErrUnavailable and the context's error if ctx ends), then returns
// the error set by Fail, if any.
func (e *Embedder) EmbedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	e.texts.Add(int64(len(texts)))

	if d := e.Delay(); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("postgramtest embedder: %w: %w", postgram.ErrUnavailable, ctx.Err())
		case <-t.C:
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("postgramtest embedder: %w: %w", postgram.ErrUnavailable, err)
	}
	e.mu.RLock()
	fail := e.fail
	e.mu.RUnlock()
	if fail != nil {
		return nil, fail
	}
	if e.dims <= 0 {
		return nil, fmt.Errorf("postgramtest embedder: %w", &postgram.FieldError{
			Field: "dimensions", Message: fmt.Sprintf("must be positive, got %d", e.dims)})
	}
	if n := e.maxBatch.Load(); n > 0 && int64(len(texts)) > n {
		return nil, fmt.Errorf("postgramtest embedder: %w: batch of %d texts exceeds max batch %d",
			postgram.ErrEmbeddingFailed, len(texts), n)
	}
	if len(texts) == 0 {
		return nil, nil
	}

	out := make([][]float32, len(texts))
	acc := make([]float64, e.dims)
	var fs features
	for i, text := range texts {
		fs.reset()
		fs.collect(text)
		clear(acc)
		out[i] = fs.vector(acc)
	}
	return out, nil
}

// features is the bag of hashed features of one text, in order of first
// occurrence so that floating-point sums are deterministic. Repeated
// features are merged, so each distinct one is expanded only once.
type features struct {
	index   map[uint64]int // seed → position in seeds and weights
	seeds   []uint64
	weights []float64
	offs    []int // scratch: rune offsets in a padded word
}

func (f *features) reset() {
	if f.index == nil {
		f.index = make(map[uint64]int)
	}
	clear(f.index)
	f.seeds = f.seeds[:0]
	f.weights = f.weights[:0]
}

func (f *features) add(seed uint64, weight float64) {
	if i, ok := f.index[seed]; ok {
		f.weights[i] += weight
		return
	}
	f.index[seed] = len(f.seeds)
	f.seeds = append(f.seeds, seed)
	f.weights = append(f.weights, weight)
}

// collect adds the word and trigram features of text.
func (f *features) collect(text string) {
	for word := range words(text) {
		f.add(fnv64a('w', word), wordWeight)

		// Trigrams of the word padded with spaces, so a word of n runes has
		// n trigrams; each gets weight trigramWeight/sqrt(n) so that the
		// trigram part of every word has about the same norm.
		padded := " " + word + " "
		f.offs = f.offs[:0]
		for off := range padded {
			f.offs = append(f.offs, off)
		}
		f.offs = append(f.offs, len(padded))
		n := len(f.offs) - 3 // runes in padded minus 2 = runes in word
		w := trigramWeight / math.Sqrt(float64(n))
		for k := range n {
			f.add(fnv64a('t', padded[f.offs[k]:f.offs[k+3]]), w)
		}
	}
}

// vector expands the features into acc (len = dims, zeroed) and returns
// the L2-normalised result, or the first unit vector if there are none.
func (f *features) vector(acc []float64) []float32 {
	for i, seed := range f.seeds {
		addFeature(acc, seed, f.weights[i])
	}
	v := make([]float32, len(acc))
	var sum float64
	for _, x := range acc {
		sum += x * x
	}
	if sum == 0 {
		v[0] = 1
		return v
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range acc {
		v[i] = float32(x * inv)
	}
	return v
}

// words yields the lowercase runs of Unicode letters and digits in text.
func words(text string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		var b strings.Builder
		flush := func() bool {
			if b.Len() == 0 {
				return true
			}
			w := b.String()
			b.Reset()
			return yield(w)
		}
		for _, r := range text {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				b.WriteRune(unicode.ToLower(r))
				continue
			}
			if !flush() {
				return
			}
		}
		flush()
	}
}

// fnv64a returns the FNV-64a hash of kind followed by s; kind separates
// word features from trigram features.
func fnv64a(kind byte, s string) uint64 {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	h ^= uint64(kind)
	h *= prime64
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime64
	}
	return h
}

// addFeature adds weight times the pseudo-random ±1 vector seeded by seed
// to acc. The vector is expanded from the seed with splitmix64, 64 signs per
// generated value.
func addFeature(acc []float64, seed uint64, weight float64) {
	// Flipping the sign bit of weight when a random bit is 0 avoids an
	// unpredictable branch per dimension.
	wbits := math.Float64bits(weight)
	state := seed
	for i := 0; i < len(acc); i += 64 {
		bits := splitmix64(&state)
		chunk := acc[i:min(i+64, len(acc))]
		for j := range chunk {
			chunk[j] += math.Float64frombits(wbits ^ (^bits&1)<<63)
			bits >>= 1
		}
	}
}

// splitmix64 advances state and returns the next pseudo-random value.
func splitmix64(state *uint64) uint64 {
	*state += 0x9e3779b97f4a7c15
	z := *state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
