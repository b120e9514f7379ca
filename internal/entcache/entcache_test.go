package entcache

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
)

func entity(content string) *driver.Entity {
	return &driver.Entity{ID: uuid.New(), Content: content, Tags: []string{"t"},
		Metadata: map[string]any{"a": map[string]any{"b": []any{"c"}}}}
}

// TestCache: hits are copies; a fill that raced with an invalidation is
// dropped; entities leave by id, by rid, by workspace and by size; a
// disabled cache keeps nothing.
func TestCache(t *testing.T) {
	t.Parallel()
	c := New(1 << 20)
	a, b := entity("alpha"), entity("beta")
	gen := c.Generation()
	c.Put(gen, "w1", 0, Clone(a), 10)
	c.Put(gen, "w1", 7, Clone(b), 10)

	hits, missing, _ := c.Lookup("w1", []uuid.UUID{a.ID, b.ID, a.ID, uuid.Nil})
	if len(hits) != 2 || !cmp.Equal(missing, []uuid.UUID{uuid.Nil}) {
		t.Fatalf("lookup: %d hits, missing %v", len(hits), missing)
	}
	if diff := cmp.Diff(a, hits[0]); diff != "" {
		t.Fatalf("hit differs (-put +got):\n%s", diff)
	}
	hits[0].Tags[0] = "x"
	hits[0].Metadata["a"].(map[string]any)["b"].([]any)[0] = "x"
	if got := c.Get("w1", a.ID); !cmp.Equal(got, a) {
		t.Fatalf("a caller's change reached the cache: %+v", got)
	}
	if c.Get("w2", a.ID) != nil {
		t.Fatal("another workspace's read found the entity")
	}

	// A fill read before an invalidation is dropped.
	stale := c.Generation()
	c.Invalidate("w1", map[uuid.UUID]bool{a.ID: true})
	if c.Get("w1", a.ID) != nil {
		t.Fatal("invalidated by id, still cached")
	}
	c.Put(stale, "w1", 0, Clone(a), 10)
	if c.Get("w1", a.ID) != nil {
		t.Fatal("a fill older than an invalidation was kept")
	}
	c.InvalidateRIDs(map[int64]bool{7: true})
	if c.Get("w1", b.ID) != nil {
		t.Fatal("invalidated by rid, still cached")
	}

	c.Put(c.Generation(), "w1", 0, Clone(a), 10)
	c.Put(c.Generation(), "w2", 0, Clone(b), 10)
	c.ClearWorkspace("w1")
	if c.Get("w1", a.ID) != nil || c.Get("w2", b.ID) == nil || c.Len() != 1 {
		t.Fatalf("ClearWorkspace(w1): %d cached", c.Len())
	}

	// Size: the least recently used leave first; an entity larger than an
	// eighth of the cache is not kept.
	small := New(8 * (entOverhead + 100))
	var ids []uuid.UUID
	for range 12 {
		e := entity("")
		ids = append(ids, e.ID)
		small.Put(small.Generation(), "w", 0, e, 10)
	}
	if small.Len() >= 12 || small.Get("w", ids[11]) == nil || small.Get("w", ids[0]) != nil {
		t.Fatalf("eviction: %d cached, newest %v, oldest %v", small.Len(), small.Get("w", ids[11]) != nil, small.Get("w", ids[0]) != nil)
	}
	big := entity(string(make([]byte, 2000)))
	small.Put(small.Generation(), "w", 0, big, 10)
	if small.Get("w", big.ID) != nil {
		t.Fatal("an entity larger than an eighth of the cache was kept")
	}

	off := New(-1)
	off.Put(off.Generation(), "w", 0, entity("x"), 1)
	if off.Enabled() || off.Len() != 0 {
		t.Fatal("a disabled cache kept an entity")
	}
}
