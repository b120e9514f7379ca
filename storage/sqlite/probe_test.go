package sqlite

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

func testStore(t testing.TB) *Store {
	t.Helper()
	ctx := context.Background()
	st, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "p.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

func newEntity(content string) *postgram.Entity {
	now := time.Now().UTC().Truncate(time.Microsecond)
	return &postgram.Entity{ID: uuid.New(), Type: postgram.TypeMemory, Content: content, Visibility: postgram.VisibilityShared,
		Status: postgram.StatusActive, Version: 1, EnrichmentStatus: postgram.StagePending, ExtractionStatus: postgram.StageSkipped,
		Metadata: map[string]any{}, CreatedAt: now, UpdatedAt: now}
}

// TestKeywordProbeGolden runs every golden query through KeywordProbe, in
// every mode, against the golden documents stored as chunks, and compares
// the hits, their masks and ranks with PostgreSQL's answers. A second
// workspace holds the same documents and must never leak into the first.
func TestKeywordProbeGolden(t *testing.T) {
	b, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	var corpus golden
	if err := json.Unmarshal(b, &corpus); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := testStore(t)
	chunkOf := map[uuid.UUID]int{} // chunk id → doc index in "main"
	var otherChunk uuid.UUID
	for _, ws := range []string{"main", "other"} {
		for i, d := range corpus.Docs {
			e := newEntity(d.Doc)
			cid := uuid.New()
			if err := st.CreateEntity(ctx, ws, e, []driver.ChunkInput{{ID: cid, Content: d.Doc, End: len(d.Doc)}}, nil); err != nil {
				t.Fatal(err)
			}
			if ws == "main" {
				chunkOf[cid] = i
			} else {
				otherChunk = cid
			}
		}
	}
	for qi, terms := range corpus.Queries {
		if len(terms) > 32 || RaceEnabled && qi%6 != 0 {
			continue
		}
		check := func(mode driver.ProbeMode, term int, want func(r [4]float64) bool) {
			t.Helper()
			for _, variant := range []string{"fts", "bare", "only", "only-bare"} {
				kq := driver.KeywordQuery{Terms: terms, Mode: mode, Term: term, Limit: 1000, Bare: strings.HasSuffix(variant, "bare")}
				inOnly := func(int) bool { return true }
				if strings.HasPrefix(variant, "only") {
					// Every other document (and a chunk of another workspace,
					// which must not be returned).
					inOnly = func(i int) bool { return i%2 == 0 }
					for id, i := range chunkOf {
						if inOnly(i) {
							kq.Only = append(kq.Only, id)
						}
					}
					kq.Only = append(kq.Only, otherChunk)
				}
				hits, err := st.KeywordProbe(ctx, "main", kq)
				if err != nil {
					t.Fatal(err)
				}
				got := map[int]bool{}
				for _, h := range hits {
					i, ok := chunkOf[h.ChunkID]
					if !ok {
						t.Fatalf("%q: hit %s from another workspace", terms, h.ChunkID)
					}
					got[i] = true
					r := corpus.Docs[i].Results[qi]
					if kq.Bare {
						continue
					}
					if float32(h.Rank) != float32(r[0]) || h.Matched != uint32(r[3]) || h.Content != corpus.Docs[i].Doc {
						t.Errorf("%q on %.30q: rank %v mask %b, PostgreSQL %v %b", terms, corpus.Docs[i].Doc, h.Rank, h.Matched, r[0], uint32(r[3]))
					}
				}
				for i, d := range corpus.Docs {
					if w := want(d.Results[qi]) && inOnly(i); w != got[i] {
						t.Errorf("%q mode %d term %d %s on %.30q: hit %v, PostgreSQL %v", terms, mode, term, variant, d.Doc, got[i], w)
					}
				}
			}
		}
		check(driver.ProbeAll, 0, func(r [4]float64) bool { return r[1] == 1 })
		check(driver.ProbeAny, 0, func(r [4]float64) bool { return r[2] == 1 })
		for ti := range terms {
			check(driver.ProbeTerm, ti, func(r [4]float64) bool { return uint32(r[3])&(1<<ti) != 0 })
		}
	}
}
