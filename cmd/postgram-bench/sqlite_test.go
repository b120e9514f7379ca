package main

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"testing"
)

func TestCentroidEmbedderIsDeterministicAndNormalised(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _ := newCentroidEmbedder(32, 7).EmbedBatch(ctx, []string{"x", "y"})
	b, _ := newCentroidEmbedder(32, 7).EmbedBatch(ctx, []string{"x"})
	if !slices.Equal(a[0], b[0]) || slices.Equal(a[0], a[1]) {
		t.Fatal("vectors are not a function of the text")
	}
	var ss float64
	for _, x := range a[0] {
		ss += float64(x) * float64(x)
	}
	if ss < 0.999 || ss > 1.001 {
		t.Fatalf("norm² %v", ss)
	}
}

// TestSQLiteFixtureAndMeasure builds a small fixture, extends it to a larger
// one and measures both in-process (the command runs the measurement in a
// child process).
func TestSQLiteFixtureAndMeasure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	o := sqliteOptions{dims: 16, queries: 5, rounds: 1, seed: 3}
	small, large := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	if err := ensureSQLiteFixture(ctx, o, small, 40, "", 0, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := ensureSQLiteFixture(ctx, o, large, 70, small, 40, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := ensureSQLiteFixture(ctx, o, large, 70, small, 40, io.Discard); err != nil { // reused
		t.Fatal(err)
	}
	for path, n := range map[string]int{small: 40, large: 70} {
		m, err := measureSQLite(ctx, o, path)
		if err != nil {
			t.Fatal(err)
		}
		if m.Chunks != n || m.Embedded != n || m.Hybrid.N != 5 || m.Vector.N != 5 || m.Keyword.N != 5 || m.QueryHits != 5 || m.Degraded != 0 {
			t.Fatalf("%s: %+v", path, m)
		}
		if m.OpenMS <= 0 || m.FileBytes <= 0 {
			t.Fatalf("%s: %+v", path, m)
		}
	}
}
