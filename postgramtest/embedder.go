// Package postgramtest provides test doubles for postgram: a deterministic,
// offline Embedder whose vectors carry enough meaning for hybrid-search
// tests, with knobs to inject latency and failures and counters to observe
// how it was called.
package postgramtest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/hashing"
)

// Embedder is a deterministic postgram.Embedder that needs no network: the
// vectors of providers/hashing (see there) plus test knobs.
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

	return hashing.Vectors(e.dims, texts), nil
}
