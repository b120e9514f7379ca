package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/postgram-go/postgram/internal/chunk"
	"github.com/postgram-go/postgram/internal/query"
)

func TestVocabularyDeterministic(t *testing.T) {
	a, b := NewVocabulary(defaultSeed), NewVocabulary(defaultSeed)
	if !slices.Equal(a.Common, b.Common) || !slices.Equal(a.Identifiers, b.Identifiers) {
		t.Fatal("the same seed produced different vocabularies")
	}
	if n := a.Size(); n < 2800 || n > 3300 {
		t.Fatalf("vocabulary has %d entries, want about 3,000", n)
	}
	if c := NewVocabulary(defaultSeed + 1); slices.Equal(a.Common, c.Common) {
		t.Fatal("a different seed produced the same vocabulary")
	}
	seen := map[string]bool{}
	for _, w := range a.Common {
		lw := strings.ToLower(w)
		if seen[lw] {
			t.Fatalf("duplicate word %q", w)
		}
		seen[lw] = true
		if query.IsStopwordTerm(w) {
			t.Fatalf("stopword %q in the vocabulary", w)
		}
	}
}

func TestFixtureDeterministicAndChunkCounts(t *testing.T) {
	const entities, chunks, narrow = 300, 420, 30
	f1, err := NewFixture(defaultSeed, entities, chunks, narrow)
	if err != nil {
		t.Fatal(err)
	}
	f2, _ := NewFixture(defaultSeed, entities, chunks, narrow)
	total, long, narrowN := 0, 0, 0
	// Generate f2 in reverse order: an entity must not depend on the
	// entities generated before it.
	second := make([]string, entities)
	for i := entities - 1; i >= 0; i-- {
		second[i] = f2.Entity(i).Content
	}
	for i := range entities {
		e := f1.Entity(i)
		if e.Content != second[i] {
			t.Fatalf("entity %d differs between two fixtures with the same seed", i)
		}
		if again := f1.Entity(i); again.Content != e.Content || !slices.Equal(again.Tags, e.Tags) {
			t.Fatalf("entity %d differs between two calls", i)
		}
		n := len(chunk.Split(e.Content, chunkCfg))
		if n != f1.WantChunks(i) {
			t.Fatalf("entity %d: %d chunks, want %d (%d runes)", i, n, f1.WantChunks(i), len([]rune(e.Content)))
		}
		total += n
		if n == 2 {
			long++
		}
		if slices.Contains(e.Tags, narrowTag) {
			narrowN++
			if n != 1 {
				t.Fatalf("narrow entity %d has %d chunks", i, n)
			}
		}
	}
	if total != chunks || long != chunks-entities || narrowN != narrow || f1.NarrowCount() != narrow {
		t.Fatalf("total %d chunks, %d long, %d narrow; want %d, %d, %d", total, long, narrowN, chunks, chunks-entities, narrow)
	}
	if other, _ := NewFixture(defaultSeed+1, entities, chunks, narrow); other.Entity(0).Content == f1.Entity(0).Content {
		t.Fatal("a different seed produced the same entity")
	}
}

func TestNewFixtureRejectsImpossibleChunkCounts(t *testing.T) {
	for _, c := range [][2]int{{10, 9}, {10, 21}, {0, 0}} {
		if _, err := NewFixture(1, c[0], c[1], 1); err == nil {
			t.Errorf("NewFixture(entities=%d, chunks=%d) succeeded", c[0], c[1])
		}
	}
}

func TestQueries(t *testing.T) {
	v := NewVocabulary(defaultSeed)
	q1, q2 := newQueryGen(v, 7), newQueryGen(v, 7)
	for range 50 {
		if a, b := q1.unique(q1.short), q2.unique(q2.short); a != b {
			t.Fatalf("same seed, different queries: %q vs %q", a, b)
		}
	}
	p := query.Parse(q1.pasted(300))
	if len(p.Terms) != query.MaxTerms || p.Truncated != 300-query.MaxTerms || p.Dropped != 0 {
		t.Fatalf("pasted query: %d terms, %d truncated, %d dropped", len(p.Terms), p.Truncated, p.Dropped)
	}
	if l := query.Parse(q1.commonWords(12, 60)); len(l.Terms) != 12 {
		t.Fatalf("long query kept %d terms, want 12", len(l.Terms))
	}
}

func TestContentOfSize(t *testing.T) {
	v := NewVocabulary(defaultSeed)
	for _, size := range []int{1, 17, 1024, 5000} {
		s := ContentOfSize(v, defaultSeed, 3, size)
		if len(s) != size || strings.TrimSpace(s) == "" || s != ContentOfSize(v, defaultSeed, 3, size) {
			t.Fatalf("size %d: got %d bytes %q…", size, len(s), truncateText(s, 30))
		}
	}
}
