package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/sqlite"
)

// graphArgs is a tiny run: a few dozen entities, so every Expand profile
// and link-neighbors take milliseconds.
var graphArgs = []string{"--entities", "40", "--edges", "150", "--dims", "16", "--seeds", "8", "--rounds", "1", "--concurrency", "2"}

// runGraphOK runs the graph subcommand and checks its tables.
func runGraphOK(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), append(append([]string{"graph"}, graphArgs...), args...), &out, &errOut); code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	s := out.String()
	for _, want := range []string{"Client.Expand", "depth 2", "depth 3, cap 200", "+neighbours", "Client.LinkNeighborsBatch", "load average"} {
		if !strings.Contains(s, want) {
			t.Fatalf("output lacks %q:\n%s", want, s)
		}
	}
	return s
}

func TestGraphFixtureDeterministic(t *testing.T) {
	t.Parallel()
	a, b := newGraphFixture(5, 300, 2000), newGraphFixture(5, 300, 2000)
	if len(a.edges) != 2000 {
		t.Fatalf("%d edges", len(a.edges))
	}
	type key struct{ s, d, r string }
	seen := map[key]bool{}
	for i, e := range a.edges {
		if e.ID != b.edges[i].ID || e.SourceID != b.edges[i].SourceID || e.Confidence != b.edges[i].Confidence {
			t.Fatalf("edge %d differs between two fixtures with the same seed", i)
		}
		if e.SourceID == e.TargetID || e.Confidence < 0.3 || e.Confidence > 1 {
			t.Fatalf("edge %d: %+v", i, e)
		}
		k := key{e.SourceID.String(), e.TargetID.String(), e.Relation}
		if seen[k] {
			t.Fatalf("duplicate edge %v", k)
		}
		seen[k] = true
	}
	if a.entityID(7) != b.entityID(7) || a.entityID(7) == a.entityID(8) {
		t.Fatal("entity ids are not a function of the seed and the index")
	}
	// Skewed degrees: a hub far above the median.
	if maxD, med := a.maxDegree(), a.medianDegree(); maxD < 5*med {
		t.Fatalf("max degree %d, median %d: not skewed", maxD, med)
	}
}

func TestGraphSQLite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "g.db")
	runGraphOK(t, "--backend", "sqlite", "--path", path)
	if s := runGraphOK(t, "--backend", "sqlite", "--path", path); !strings.Contains(s, "reused the fixture") {
		t.Fatalf("the second run did not reuse the fixture:\n%s", s)
	}
}

func TestGraphPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema, _, _ := strings.Cut(u.Query().Get("search_path"), ",")
	runGraphOK(t, "--backend", "postgres", "--database-url", dsn, "--schema", schema)
	if s := runGraphOK(t, "--backend", "postgres", "--database-url", dsn, "--schema", schema); !strings.Contains(s, "reused the fixture") {
		t.Fatalf("the second run did not reuse the fixture:\n%s", s)
	}
}

// plainGraph hides a store's optional interfaces (ExpandLevelStorage among
// them), so that Expand takes its generic FindEdges path.
type plainGraph struct{ driver.Storage }

// TestExpandLevelMatchesFindEdges checks, on the skewed fixture graph, that
// Expand through the store's ExpandLevel returns exactly the graph of the
// generic FindEdges walk: the same entities in the same order, depths,
// edges and truncation, under node caps, relation and confidence filters,
// archived entities and a key limited to some entity types.
func TestExpandLevelMatchesFindEdges(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var st driver.Storage
			if backend == "sqlite" {
				s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "g.db")})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				if err := s.Migrate(ctx); err != nil {
					t.Fatal(err)
				}
				st = s
			} else {
				s, err := postgres.Open(ctx, postgres.Config{URL: pgtest.Schema(t), MaxConns: 4})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				if err := s.Migrate(ctx); err != nil {
					t.Fatal(err)
				}
				st = s
			}
			if _, ok := st.(driver.ExpandLevelStorage); !ok {
				t.Fatalf("%s does not implement ExpandLevelStorage", backend)
			}
			const n = 240
			gf := newGraphFixture(11, n, 1400)
			emb := newCentroidEmbedder(8, 11)
			modelID, err := st.EnsureModel(ctx, emb.Model())
			if err != nil {
				t.Fatal(err)
			}
			if err := gf.build(ctx, st, emb, modelID, func(string, ...any) {}); err != nil {
				t.Fatal(err)
			}
			// Ties: from seed x, the hub h and a at depth 1; then thirty
			// entities joined to both h and a by edges of equal confidence,
			// so that which edge ranks an entity (and so the cap's choice)
			// depends on the edge ids.
			var ties []postgram.Edge
			tie := func(k, src, dst int, conf float64) {
				ties = append(ties, postgram.Edge{ID: gf.entityID(n + k), SourceID: gf.entityID(src), TargetID: gf.entityID(dst),
					Relation: "tie", Confidence: conf, Source: postgram.EdgeSourceManual, Metadata: map[string]any{},
					CreatedAt: gf.base, UpdatedAt: gf.base})
			}
			x, h, a := n-1, 0, 1
			tie(0, x, h, 1)
			tie(1, x, a, 1)
			for i := 1; i <= 30; i++ {
				t := 2 + i*7%(n-3)
				tie(2*i, h, t, 0.5)
				tie(2*i+1, t, a, 0.5)
			}
			if _, err := st.ImportEdges(ctx, workspace, ties, true); err != nil {
				t.Fatal(err)
			}
			fast, err := postgram.New(ctx, postgram.Config{Store: st})
			if err != nil {
				t.Fatal(err)
			}
			slow, err := postgram.New(ctx, postgram.Config{Store: plainGraph{st}})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i += 23 {
				if _, err := fast.Delete(ctx, gf.entityID(i+5)); err != nil { // archive
					t.Fatal(err)
				}
			}
			limited := postgram.Principal{ClientID: "k", Scopes: postgram.AllScopes,
				AllowedTypes: []postgram.EntityType{postgram.TypeMemory, postgram.TypeDocument, postgram.TypeProject, postgram.TypeTask}}
			clients := []struct {
				name       string
				fast, slow *postgram.Client
			}{{"admin", fast, slow}, {"limited", postgramtest.Admin(t, fast).As(limited), postgramtest.Admin(t, slow).As(limited)}}
			opts := []postgram.ExpandOptions{
				{}, {Depth: 2}, {Depth: 3}, {Depth: 3, MaxNodes: 200}, {Depth: 2, MaxNodes: 5}, {Depth: 3, MaxNodes: 1000},
				{Depth: 3, MaxNodes: 1}, {Depth: 2, MaxNodes: 12}, {Depth: 2, MaxNodes: 25, RelationTypes: []string{"tie"}}, {Depth: 2, MinConfidence: 0.8}, {Depth: 3, RelationTypes: []string{"mentions", "tie"}},
				{Depth: 2, IncludeArchived: true}, {Depth: 3, MaxNodes: 50, MinConfidence: 0.5, RelationTypes: []string{"mentions", "works_on", "part_of"}},
			}
			checked := 0
			for _, cl := range clients {
				for _, o := range opts {
					for i := 0; i < n+41; i += 41 {
						seed := gf.entityID(min(i, x))
						want, werr := cl.slow.Expand(ctx, seed, o)
						got, gerr := cl.fast.Expand(ctx, seed, o)
						if (werr == nil) != (gerr == nil) {
							t.Fatalf("%s %+v seed %d: errors %v and %v", cl.name, o, i, werr, gerr)
						}
						if werr != nil {
							continue
						}
						if d := graphDiff(want, got); d != "" {
							t.Fatalf("%s %+v seed %d: %s", cl.name, o, i, d)
						}
						checked++
					}
				}
			}
			if checked < 100 {
				t.Fatalf("only %d expansions compared", checked)
			}
		})
	}
}

// graphDiff describes the first difference between two graphs, or "".
func graphDiff(want, got *postgram.Graph) string {
	if want.Truncated != got.Truncated {
		return fmt.Sprintf("truncated %v, want %v", got.Truncated, want.Truncated)
	}
	if len(want.Entities) != len(got.Entities) {
		return fmt.Sprintf("%d entities, want %d", len(got.Entities), len(want.Entities))
	}
	for i := range want.Entities {
		if want.Entities[i].ID != got.Entities[i].ID {
			return fmt.Sprintf("entity %d is %s, want %s", i, got.Entities[i].ID, want.Entities[i].ID)
		}
	}
	if !maps.Equal(want.Depths, got.Depths) {
		return fmt.Sprintf("depths %v, want %v", got.Depths, want.Depths)
	}
	if len(want.Edges) != len(got.Edges) {
		return fmt.Sprintf("%d edges, want %d", len(got.Edges), len(want.Edges))
	}
	for i := range want.Edges {
		if want.Edges[i].ID != got.Edges[i].ID {
			return fmt.Sprintf("edge %d is %s, want %s", i, got.Edges[i].ID, want.Edges[i].ID)
		}
	}
	return ""
}
