package hashing_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/providers/hashing"
)

func cos(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestEmbedder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := hashing.New(0)
	if got := e.Model(); got != (postgram.ModelInfo{Provider: "test", Name: "deterministic-v1", Dimensions: hashing.DefaultDimensions}) {
		t.Fatalf("Model() = %+v", got)
	}
	vs, err := e.EmbedBatch(ctx, []string{"pgvector HNSW index", "which HNSW index for pgvector?", "quarterly budget review", ""})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if len(v) != hashing.DefaultDimensions || math.Abs(n-1) > 1e-4 {
			t.Fatalf("vector %d: len %d, norm² %f", i, len(v), n)
		}
	}
	if near, far := cos(vs[0], vs[1]), cos(vs[0], vs[2]); near < far+0.3 {
		t.Fatalf("shared words %.3f, unrelated %.3f", near, far)
	}
	// The same vectors as the test double's (the identity stores recorded).
	want, err := postgramtest.NewEmbedder(hashing.DefaultDimensions).EmbedBatch(ctx, []string{"pgvector HNSW index"})
	if err != nil {
		t.Fatal(err)
	}
	if cos(want[0], vs[0]) < 0.999999 {
		t.Fatal("hashing and postgramtest vectors differ")
	}
	big := make([]string, hashing.MaxBatch+1)
	if _, err := e.EmbedBatch(ctx, big); !errors.Is(err, postgram.ErrEmbeddingFailed) {
		t.Fatalf("oversized batch: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.EmbedBatch(cctx, []string{"x"}); !errors.Is(err, postgram.ErrUnavailable) {
		t.Fatalf("cancelled: %v", err)
	}
}

func BenchmarkEmbedBatch(b *testing.B) {
	e := hashing.New(1536)
	texts := make([]string, 32)
	for i := range texts {
		texts[i] = strings.Repeat(fmt.Sprintf("word%d another chunk of text about retrieval ", i), 20)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.EmbedBatch(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
	}
}

func Example() {
	e := hashing.New(64)
	vs, _ := e.EmbedBatch(context.Background(), []string{"offline search", "search offline"})
	fmt.Printf("%d vectors of %d dimensions; word order does not matter: %.2f\n", len(vs), len(vs[0]), cos(vs[0], vs[1]))
	// Output: 2 vectors of 64 dimensions; word order does not matter: 1.00
}
