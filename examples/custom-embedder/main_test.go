package main

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"embedded 3 entities in 1 call(s)",
		"model example/trigram-v1, 512 dimensions, active=true",
		`search "upgrading the kubernetes nodes" (query vector from provider):` + "\n  - Kubernetes upgrade runbook: drain the nodes one by one. (vector rank 1,",
		`search "cinnamon apples" (query vector from provider):` + "\n  - Grandmother's apple strudel recipe with cinnamon. (vector rank 1,",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestTrigramEmbedder(t *testing.T) {
	t.Parallel()
	e := TrigramEmbedder{Dims: 64}
	texts := []string{"apple strudel", "apple strudels", "kubernetes", ""}
	vs, err := e.EmbedBatch(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(texts) {
		t.Fatalf("got %d vectors for %d texts", len(vs), len(texts))
	}
	dot := func(a, b []float32) float64 {
		var s float64
		for i := range a {
			s += float64(a[i]) * float64(b[i])
		}
		return s
	}
	for i, v := range vs {
		if len(v) != e.Dims || math.Abs(dot(v, v)-1) > 1e-5 {
			t.Errorf("vector %d: length %d, norm² %.6f; want %d and 1", i, len(v), dot(v, v), e.Dims)
		}
	}
	if near, far := dot(vs[0], vs[1]), dot(vs[0], vs[2]); near <= far {
		t.Errorf("cosine(similar) = %.3f <= cosine(unrelated) = %.3f", near, far)
	}
	again, _ := e.EmbedBatch(context.Background(), texts[:1])
	if dot(again[0], vs[0]) < 1-1e-6 {
		t.Error("the same text gave a different vector")
	}
}
