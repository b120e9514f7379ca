package synth

import (
	"bytes"
	"testing"

	"github.com/postgram-go/postgram/internal/quality"
)

// TestCommittedIsGenerated keeps the committed set equal to what the
// generator writes (regenerate with go generate ./internal/quality/synth).
func TestCommittedIsGenerated(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := Generate(&b, DefaultSeed); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), Committed) {
		t.Fatal("org.jsonl differs from Generate(DefaultSeed): run go generate ./internal/quality/synth and commit it")
	}
}

// TestCommittedSet checks the set's shape: parseable, at least 500
// entities of every type, 150 queries in 7 categories or more, each
// category with held-out queries.
func TestCommittedSet(t *testing.T) {
	t.Parallel()
	set, err := quality.Parse(bytes.NewReader(Committed), CommittedName)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]int{}
	for _, e := range set.Entities {
		types[e.Type]++
	}
	if len(set.Entities) < 500 || len(types) != 6 {
		t.Errorf("%d entities of %d types, want at least 500 of all 6: %v", len(set.Entities), len(types), types)
	}
	if len(set.Queries) < 150 {
		t.Errorf("%d queries, want at least 150", len(set.Queries))
	}
	cats := set.Categories()
	if len(cats) < 7 {
		t.Errorf("%d categories, want at least 7", len(cats))
	}
	held := map[string]int{}
	for _, q := range set.Only(quality.SplitHeldOut) {
		held[q.Category]++
	}
	for _, c := range cats {
		if held[c] < 5 {
			t.Errorf("category %s has %d held-out queries, want at least 5", c, held[c])
		}
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	t.Parallel()
	var a, b, c bytes.Buffer
	if err := Generate(&a, 7); err != nil {
		t.Fatal(err)
	}
	if err := Generate(&b, 7); err != nil {
		t.Fatal(err)
	}
	if err := Generate(&c, 8); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("the same seed generated different sets")
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Error("different seeds generated the same set")
	}
}
