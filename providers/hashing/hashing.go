// Package hashing is an offline embedder: it turns text into vectors by
// feature hashing, with no network, no model file and no GPU.
//
// Each lowercase word (a run of Unicode letters and digits) adds a
// pseudo-random ±1 vector seeded by the word's FNV-64a hash; the word's
// character trigrams add smaller pseudo-random vectors; the sum is
// L2-normalised. Texts that share words get a clearly higher cosine
// similarity than unrelated texts, and partial overlaps ("embedding",
// "embeddings") score a little: the vector branch of hybrid search then
// behaves like fuzzy lexical matching rather than semantic matching.
//
// Use it where no embedding service can be reached or paid for (air-gapped
// installs, demos, CI, the examples in this repository), or as a baseline
// to compare a real model against. The vectors depend only on the text and
// the dimension count, so they are stable across runs, processes and
// platforms; switching to a real model later is `pgm-admin embeddings
// migrate`. The server selects it with EMBEDDING_PROVIDER=deterministic.
package hashing

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/postgram-go/postgram"
)

// Feature weights. A word contributes a random ±1 vector of weight
// wordWeight; its character trigrams together contribute trigramWeight.
const (
	wordWeight    = 1.0
	trigramWeight = 0.7
)

// DefaultDimensions is the vector length New uses for dims <= 0.
const DefaultDimensions = 256

// MaxBatch is the largest batch EmbedBatch accepts in one call.
const MaxBatch = 256

// Embedder is the feature-hashing postgram.Embedder. It is safe for
// concurrent use.
type Embedder struct {
	dims int
}

// New returns an Embedder producing vectors of length dims
// (DefaultDimensions when dims <= 0).
func New(dims int) *Embedder {
	if dims <= 0 {
		dims = DefaultDimensions
	}
	return &Embedder{dims: dims}
}

// Model returns {Provider: "test", Name: "deterministic-v1", Dimensions}:
// the identity stores have recorded for these vectors since the first
// release (when the embedder lived in postgramtest), kept so that existing
// stores need no re-embedding.
func (e *Embedder) Model() postgram.ModelInfo {
	return postgram.ModelInfo{Provider: "test", Name: "deterministic-v1", Dimensions: e.dims}
}

// MaxBatch implements postgram.MaxBatcher.
func (e *Embedder) MaxBatch() int { return MaxBatch }

// EmbedBatch returns one unit vector per text, in input order. A batch
// larger than MaxBatch is refused with an error wrapping
// postgram.ErrEmbeddingFailed.
func (e *Embedder) EmbedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("hashing embedder: %w: %w", postgram.ErrUnavailable, err)
	}
	if len(texts) > MaxBatch {
		return nil, fmt.Errorf("hashing embedder: %w: batch of %d texts exceeds max batch %d",
			postgram.ErrEmbeddingFailed, len(texts), MaxBatch)
	}
	return Vectors(e.dims, texts), nil
}

// Vectors embeds texts with dims dimensions (dims must be positive), with
// no batch limit: the computation behind EmbedBatch, for callers that wrap
// it (postgramtest's test double).
func Vectors(dims int, texts []string) [][]float32 {
	if len(texts) == 0 {
		return nil
	}
	out := make([][]float32, len(texts))
	acc := make([]float64, dims)
	var fs features
	for i, text := range texts {
		fs.reset()
		fs.collect(text)
		clear(acc)
		out[i] = fs.vector(acc)
	}
	return out
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

// signTable holds, for each pattern n of four sign bits, the four values
// ±weight they stand for (bit i set: +weight, clear: −weight).
type signTable [16][4]float64

func newSignTable(weight float64) *signTable {
	var tab signTable
	for n := range tab {
		for i := range tab[n] {
			if n>>i&1 == 1 {
				tab[n][i] = weight
			} else {
				tab[n][i] = -weight
			}
		}
	}
	return &tab
}

// addFeature adds weight times the pseudo-random ±1 vector seeded by seed
// to acc. The vector is expanded from the seed with splitmix64, 64 signs per
// generated value: bit j of the value is the sign of element j of the
// block (1: +weight, 0: −weight). Four elements at a time take their
// values from a table of the 16 sign patterns (no branch and no bit
// arithmetic per element); each element still gets exactly +weight or
// −weight added, in feature order, so the sums are the same bits as an
// element-by-element expansion (TestVectorsStable).
func addFeature(acc []float64, seed uint64, weight float64) {
	tab := newSignTable(weight)
	state := seed
	i := 0
	for ; i+64 <= len(acc); i += 64 {
		bits := splitmix64(&state)
		a := (*[64]float64)(acc[i : i+64])
		for j := 0; j < 64; j += 4 {
			t := &tab[bits&15]
			a[j] += t[0]
			a[j+1] += t[1]
			a[j+2] += t[2]
			a[j+3] += t[3]
			bits >>= 4
		}
	}
	if i < len(acc) {
		bits := splitmix64(&state)
		for j := range acc[i:] {
			acc[i+j] += tab[bits&1][0]
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
