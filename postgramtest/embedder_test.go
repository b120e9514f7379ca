package postgramtest_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
)

// Compile-time checks.
var (
	_ postgram.Embedder   = (*postgramtest.Embedder)(nil)
	_ postgram.MaxBatcher = (*postgramtest.Embedder)(nil)
)

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func embedOne(t *testing.T, e *postgramtest.Embedder, text string) []float32 {
	t.Helper()
	vs, err := e.EmbedBatch(context.Background(), []string{text})
	if err != nil {
		t.Fatalf("EmbedBatch(%q): %v", text, err)
	}
	return vs[0]
}

func TestModel(t *testing.T) {
	t.Parallel()
	want := postgram.ModelInfo{Provider: "test", Name: "deterministic-v1", Dimensions: 384}
	if diff := cmp.Diff(want, postgramtest.NewEmbedder(384).Model()); diff != "" {
		t.Errorf("Model() (-want +got):\n%s", diff)
	}
}

func TestVectorsAreUnitAndDeterministic(t *testing.T) {
	t.Parallel()
	texts := []string{
		"The quick brown fox jumps over the lazy dog.",
		"PostgreSQL with pgvector stores embeddings",
		"", "   ", "!!! --- ???", "a", "日本語のテキスト", "Ünïcödé wörds 123",
		strings.Repeat("long text with many repeated words ", 200),
	}
	for _, dims := range []int{1, 3, 64, 65, 384, 1536} {
		t.Run(fmt.Sprint(dims), func(t *testing.T) {
			t.Parallel()
			a, err := postgramtest.NewEmbedder(dims).EmbedBatch(context.Background(), texts)
			if err != nil {
				t.Fatalf("EmbedBatch: %v", err)
			}
			b, err := postgramtest.NewEmbedder(dims).EmbedBatch(context.Background(), texts)
			if err != nil {
				t.Fatalf("EmbedBatch: %v", err)
			}
			if diff := cmp.Diff(a, b); diff != "" {
				t.Errorf("two embedders disagree (-first +second):\n%s", diff)
			}
			if len(a) != len(texts) {
				t.Fatalf("got %d vectors for %d texts", len(a), len(texts))
			}
			for i, v := range a {
				if len(v) != dims {
					t.Errorf("vector %d has %d dimensions, want %d", i, len(v), dims)
				}
				var sum float64
				for _, x := range v {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						t.Fatalf("vector for %q contains %v", texts[i], x)
					}
					sum += float64(x) * float64(x)
				}
				if math.Abs(sum-1) > 1e-5 {
					t.Errorf("vector for %q has squared norm %v, want 1", texts[i], sum)
				}
			}
		})
	}
}

func TestNoWordsGivesFixedVector(t *testing.T) {
	t.Parallel()
	e := postgramtest.NewEmbedder(8)
	want := []float32{1, 0, 0, 0, 0, 0, 0, 0}
	for _, text := range []string{"", " \t\n", "!?.,;:-_/()", "🙂🙂"} {
		if diff := cmp.Diff(want, embedOne(t, e, text)); diff != "" {
			t.Errorf("EmbedBatch(%q) (-want +got):\n%s", text, diff)
		}
	}
}

// TestGolden pins a few values so that accidental changes to the algorithm,
// which would silently change every stored test vector, are noticed. A
// deliberate change must also change Model().Name.
func TestGolden(t *testing.T) {
	t.Parallel()
	got := embedOne(t, postgramtest.NewEmbedder(6), "Hello, world")
	want := []float32{-0.6265416, -0.47716528, -0.32778892, 0.47716528, 0.14937636, -0.14937636}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
		t.Errorf("vector for %q changed (-want +got):\n%s", "Hello, world", diff)
	}
}

func TestTokenization(t *testing.T) {
	t.Parallel()
	e := postgramtest.NewEmbedder(256)
	same := [][2]string{
		{"Hello World", "hello, world!"},
		{"HELLO   world", "hello\nworld"},
		{"Café au lait", "café-AU-LAIT"},
		{"version 2 release", "Version-2 (release)"},
	}
	for _, p := range same {
		if diff := cmp.Diff(embedOne(t, e, p[0]), embedOne(t, e, p[1])); diff != "" {
			t.Errorf("%q and %q should embed identically (-a +b):\n%s", p[0], p[1], diff)
		}
	}
	different := [][2]string{
		{"hello world", "hello"},
		{"abc", "abd"},
		{"12", "1 2"},
	}
	for _, p := range different {
		if cmp.Equal(embedOne(t, e, p[0]), embedOne(t, e, p[1])) {
			t.Errorf("%q and %q embed identically, want different vectors", p[0], p[1])
		}
	}
}

func TestSimilarity(t *testing.T) {
	t.Parallel()
	e := postgramtest.NewEmbedder(1536)
	tests := []struct {
		query, near, far string
	}{
		{
			query: "postgres vector index",
			near:  "We added a vector index to Postgres last week.",
			far:   "Lunch with Alice at the Italian place on Friday.",
		},
		{
			query: "Alice birthday",
			near:  "Alice's birthday party is on Saturday",
			far:   "Deploy the new kubernetes cluster",
		},
		{
			// Partial word overlap only: trigrams must carry some signal.
			query: "embedding",
			near:  "embeddings",
			far:   "bicycle",
		},
		{
			query: "running tests",
			near:  "run the test suite",
			far:   "quarterly budget review",
		},
		{
			query: "database migration",
			near:  "migrating the databases",
			far:   "holiday photos from Lisbon",
		},
	}
	for _, tt := range tests {
		q, near, far := embedOne(t, e, tt.query), embedOne(t, e, tt.near), embedOne(t, e, tt.far)
		cn, cf := cosine(q, near), cosine(q, far)
		if cn <= cf+0.1 {
			t.Errorf("query %q: cos(near %q) = %.3f, cos(far %q) = %.3f; want near clearly higher", tt.query, tt.near, cn, tt.far, cf)
		}
		if math.Abs(cf) > 0.15 {
			t.Errorf("query %q: unrelated %q has cosine %.3f, want about 0", tt.query, tt.far, cf)
		}
	}

	// More shared words, higher similarity.
	q := embedOne(t, e, "red apple pie")
	one := cosine(q, embedOne(t, e, "red car"))
	two := cosine(q, embedOne(t, e, "red apple"))
	three := cosine(q, embedOne(t, e, "pie with red apple"))
	if !(one < two && two < three) {
		t.Errorf("cosines for 1, 2 and 3 shared words = %.3f, %.3f, %.3f; want increasing", one, two, three)
	}
}

func TestEmptyInput(t *testing.T) {
	t.Parallel()
	e := postgramtest.NewEmbedder(8)
	for _, in := range [][]string{nil, {}} {
		got, err := e.EmbedBatch(context.Background(), in)
		if err != nil || got != nil {
			t.Errorf("EmbedBatch(%#v) = %v, %v; want nil, nil", in, got, err)
		}
	}
}

func TestInvalidDimensions(t *testing.T) {
	t.Parallel()
	for _, dims := range []int{0, -1} {
		_, err := postgramtest.NewEmbedder(dims).EmbedBatch(context.Background(), []string{"x"})
		if !errors.Is(err, postgram.ErrInvalidArgument) || postgram.FieldOf(err) != "dimensions" {
			t.Errorf("NewEmbedder(%d).EmbedBatch error = %v, want invalid dimensions", dims, err)
		}
	}
}

func TestFailAndRecover(t *testing.T) {
	t.Parallel()
	e := postgramtest.NewEmbedder(4)
	down := fmt.Errorf("provider down: %w", postgram.ErrUnavailable)

	e.Fail(down)
	got, err := e.EmbedBatch(context.Background(), []string{"a"})
	if err != down || got != nil {
		t.Fatalf("EmbedBatch after Fail = %v, %v; want nil, %v", got, err, down)
	}
	e.Recover()
	if _, err := e.EmbedBatch(context.Background(), []string{"a"}); err != nil {
		t.Fatalf("EmbedBatch after Recover: %v", err)
	}
	e.Fail(down)
	e.Fail(nil)
	if _, err := e.EmbedBatch(context.Background(), []string{"a"}); err != nil {
		t.Fatalf("EmbedBatch after Fail(nil): %v", err)
	}
}

func TestCounters(t *testing.T) {
	t.Parallel()
	e := postgramtest.NewEmbedder(4)
	ctx := context.Background()
	e.EmbedBatch(ctx, []string{"a", "b", "c"})
	e.EmbedBatch(ctx, nil)
	e.Fail(errors.New("boom"))
	e.EmbedBatch(ctx, []string{"d", "e"})
	e.Recover()
	e.EmbedBatch(ctx, []string{"f"})
	if got, want := [2]int64{e.Calls(), e.Texts()}, [2]int64{4, 6}; got != want {
		t.Errorf("Calls, Texts = %v, want %v", got, want)
	}
}

func TestMaxBatch(t *testing.T) {
	t.Parallel()
	e := postgramtest.NewEmbedder(4)
	ctx := context.Background()
	if got := e.MaxBatch(); got != postgramtest.DefaultMaxBatch {
		t.Errorf("MaxBatch() = %d, want default %d", got, postgramtest.DefaultMaxBatch)
	}
	big := make([]string, postgramtest.DefaultMaxBatch+1)
	if _, err := e.EmbedBatch(ctx, big); err != nil {
		t.Errorf("default limit must not be enforced: %v", err)
	}

	e.SetMaxBatch(2)
	if got := e.MaxBatch(); got != 2 {
		t.Errorf("MaxBatch() = %d, want 2", got)
	}
	if _, err := e.EmbedBatch(ctx, []string{"a", "b"}); err != nil {
		t.Errorf("batch at the limit: %v", err)
	}
	_, err := e.EmbedBatch(ctx, []string{"a", "b", "c"})
	if !errors.Is(err, postgram.ErrEmbeddingFailed) || !strings.Contains(err.Error(), "exceeds max batch 2") {
		t.Errorf("batch over the limit: error = %v, want ErrEmbeddingFailed", err)
	}

	e.SetMaxBatch(0)
	if _, err := e.EmbedBatch(ctx, []string{"a", "b", "c"}); err != nil {
		t.Errorf("after SetMaxBatch(0): %v", err)
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	e := postgramtest.NewEmbedder(4)
	e.SetDelay(50 * time.Millisecond)
	if got := e.Delay(); got != 50*time.Millisecond {
		t.Errorf("Delay() = %v, want 50ms", got)
	}

	start := time.Now()
	if _, err := e.EmbedBatch(context.Background(), []string{"a"}); err != nil {
		t.Fatalf("EmbedBatch: %v", err)
	}
	if elapsed := time.Since(start); elapsed < 50*time.Millisecond {
		t.Errorf("EmbedBatch took %v, want at least the 50ms delay", elapsed)
	}

	e.SetDelay(time.Hour)
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"canceled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		ctx, cancel := tt.ctx()
		start := time.Now()
		_, err := e.EmbedBatch(ctx, []string{"a"})
		cancel()
		if !errors.Is(err, postgram.ErrUnavailable) || !errors.Is(err, tt.want) {
			t.Errorf("%s: error = %v, want ErrUnavailable and %v", tt.name, err, tt.want)
		}
		if elapsed := time.Since(start); elapsed > 2*time.Second {
			t.Errorf("%s: EmbedBatch returned after %v, want prompt return", tt.name, elapsed)
		}
	}

	e.SetDelay(-time.Second)
	if got := e.Delay(); got != 0 {
		t.Errorf("Delay() after negative SetDelay = %v, want 0", got)
	}
}

func TestCanceledWithoutDelay(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := postgramtest.NewEmbedder(4).EmbedBatch(ctx, []string{"a"})
	if !errors.Is(err, postgram.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want ErrUnavailable and context.Canceled", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	e := postgramtest.NewEmbedder(64)
	want := embedOne(t, postgramtest.NewEmbedder(64), "shared text")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			switch i % 4 {
			case 0:
				e.Fail(errors.New("flaky"))
				e.Recover()
			case 1:
				e.SetDelay(time.Millisecond)
				e.SetDelay(0)
			case 2:
				e.SetMaxBatch(10)
				e.SetMaxBatch(0)
			}
			for range 10 {
				vs, err := e.EmbedBatch(context.Background(), []string{"shared text"})
				if err == nil && !cmp.Equal(want, vs[0]) {
					t.Errorf("concurrent EmbedBatch returned a different vector")
				}
				_ = e.Calls() + e.Texts()
			}
		})
	}
	wg.Wait()
	if got := e.Calls(); got != 160 {
		t.Errorf("Calls() = %d, want 160", got)
	}
}

func BenchmarkEmbedder(b *testing.B) {
	query := "how do I configure the vector index"
	// About 1 KB of prose, a typical chunk.
	chunk := "Postgram keeps memories, people, projects, tasks and documents in PostgreSQL. " +
		"Each entity is split into chunks of a few hundred tokens; a background worker sends " +
		"the chunks to an embedding provider in batches and stores the vectors with pgvector. " +
		"Search runs a keyword query over a tsvector column and an approximate nearest-neighbour " +
		"query over the HNSW index, then fuses both rankings with reciprocal rank fusion. " +
		"Results honour visibility: personal entries stay private, work entries are shared with " +
		"colleagues and shared entries are visible to every key in the workspace. When the " +
		"provider is rate limited or unavailable, the worker backs off exponentially and retries " +
		"later, while keyword search keeps working. Changing the embedding model requires an " +
		"explicit migration because vectors from different models are not comparable at all."
	batch := make([]string, 32)
	for i := range batch {
		batch[i] = fmt.Sprintf("chunk %d: %s", i, chunk)
	}
	cases := []struct {
		name  string
		texts []string
	}{
		{"query", []string{query}},
		{"chunk", []string{chunk}},
		{"batch32", batch},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			e := postgramtest.NewEmbedder(1536)
			var n int64
			for _, s := range c.texts {
				n += int64(len(s))
			}
			b.SetBytes(n)
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				if _, err := e.EmbedBatch(ctx, c.texts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
