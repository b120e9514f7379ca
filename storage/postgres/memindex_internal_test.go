package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseSnapshot(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]pgSnapshot{
		"10:10:":          {xmin: 10, xmax: 10},
		"5:12:5,7,11":     {xmin: 5, xmax: 12, xip: []uint64{5, 7, 11}},
		"742:750:742,749": {xmin: 742, xmax: 750, xip: []uint64{742, 749}},
	} {
		got, err := parseSnapshot(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if d := cmp.Diff(want, got, cmp.AllowUnexported(pgSnapshot{})); d != "" {
			t.Errorf("%q (-want +got):\n%s", in, d)
		}
	}
	for _, bad := range []string{"", "10:10", "a:10:", "10:b:", "10:12:x", "1:2:3:4", "10:12:5,"} {
		if _, err := parseSnapshot(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	xmax, xip := pgSnapshot{xmin: 5, xmax: 12, xip: []uint64{5, 7}}.pending()
	if xmax != "12" || !cmp.Equal(xip, []string{"5", "7"}) {
		t.Errorf("pending: %q %q", xmax, xip)
	}
}

// TestChangeHorizons: a prune removes only rows of transactions that had
// ended an hour before, by the xmin of a run at least that old.
func TestChangeHorizons(t *testing.T) {
	t.Parallel()
	var h changeHorizons
	t0 := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	if _, ok := h.add(t0, 100); ok {
		t.Fatal("pruned at the first run")
	}
	if _, ok := h.add(t0.Add(30*time.Minute), 200); ok {
		t.Fatal("pruned after half an hour")
	}
	below, ok := h.add(t0.Add(time.Hour), 300)
	if !ok || below != 100 {
		t.Fatalf("after an hour: %d %v, want 100 true", below, ok)
	}
	below, ok = h.add(t0.Add(100*time.Minute), 400)
	if !ok || below != 200 {
		t.Fatalf("after 100 minutes: %d %v, want 200 true", below, ok)
	}
	if len(h.at) != 3 {
		t.Errorf("kept %d runs, want 3 (the older ones are no longer needed)", len(h.at))
	}
}

// TestFreshGate: every caller gets a catch-up that started after it
// arrived; callers arriving while one runs share the next one.
func TestFreshGate(t *testing.T) {
	t.Parallel()
	var g freshGate
	var runs atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	fn := func() error {
		runs.Add(1)
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		return nil
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = g.await(fn) }()
	<-started // the first catch-up runs; these five arrived after it began
	for range 5 {
		wg.Add(1)
		go func() { defer wg.Done(); _ = g.await(fn) }()
	}
	for {
		g.mu.Lock()
		n := g.waiting
		g.mu.Unlock()
		if n == 5 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if n := runs.Load(); n != 2 {
		t.Errorf("%d catch-ups, want 2 (the running one, then one shared by the five)", n)
	}
	// A failure is returned to the caller that ran it; the next one runs again.
	boom := errors.New("boom")
	if err := g.await(func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if err := g.await(func() error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// TestSearchChangesCoverEntityReads: the entity update trigger logs a
// change of every column a read returns (entityCols), so the in-memory
// index's entity cache never keeps a row a write changed. A column added
// to the reads must be added to migration 022's condition.
func TestSearchChangesCoverEntityReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openSmall(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var def string
	if err := st.pool.QueryRow(ctx, `SELECT pg_get_triggerdef(g.oid) FROM pg_trigger g
		WHERE g.tgname = 'postgram_entities_search_update' AND g.tgrelid = 'entities'::regclass`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	for _, col := range strings.Split(entityCols, ",") {
		col = strings.TrimPrefix(strings.TrimSpace(col), "e.")
		if col == "id" || col == "workspace_id" {
			continue // the key: a row with another id is another entity
		}
		if !strings.Contains(def, "old."+col+" IS DISTINCT FROM new."+col) {
			t.Errorf("the entity update trigger does not follow column %s:\n%s", col, def)
		}
	}
}

// TestDecodeVectorBinary: pgvector's binary form decodes to its floats,
// and a malformed one is an error naming the sizes, never a panic.
func TestDecodeVectorBinary(t *testing.T) {
	t.Parallel()
	raw := []byte{0, 2, 0, 0, 0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0} // [1, -2]
	got, err := decodeVectorBinary(raw, make([]float32, 0, 1))
	if err != nil || len(got) != 2 || got[0] != 1 || got[1] != -2 {
		t.Fatalf("decode: %v %v", got, err)
	}
	for _, bad := range [][]byte{nil, {0, 2}, {0, 2, 0, 0, 1, 2, 3, 4}, append(raw, 0)} {
		if _, err := decodeVectorBinary(bad, nil); err == nil || !strings.Contains(err.Error(), "vector:") {
			t.Errorf("%v: %v, want an error", bad, err)
		}
	}
}
