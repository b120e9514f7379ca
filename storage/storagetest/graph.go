package storagetest

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// testGraph runs the knowledge-graph conformance tests.
func testGraph(t *testing.T, open Opener) {
	for _, tt := range []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"LinkUnlink", testGraphLinkUnlink},
		{"LinkValidation", testGraphLinkValidation},
		{"Edges", testGraphEdges},
		{"Expand", testGraphExpand},
		{"ExpandRanking", testGraphExpandRanking},
		{"Access", testGraphAccess},
		{"Precedence", testGraphPrecedence},
		{"SearchSummaries", testGraphSearch},
		{"Neighbors", testGraphNeighbors},
		{"WorkspaceIsolation", testGraphWorkspaces},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, open)
		})
	}
}

func (e *env) link(src, dst uuid.UUID, rel string, conf ...float64) *postgram.Edge {
	e.t.Helper()
	return mustLink(e.t, e.c, src, dst, rel, conf...)
}

func mustLink(t *testing.T, c *postgram.Client, src, dst uuid.UUID, rel string, conf ...float64) *postgram.Edge {
	t.Helper()
	in := postgram.LinkInput{SourceID: src, TargetID: dst, Relation: rel}
	if len(conf) > 0 {
		in.Confidence = &conf[0]
	}
	ed, err := c.Link(t.Context(), in)
	if err != nil {
		t.Fatalf("Link(%s -%s-> %s): %v", src, rel, dst, err)
	}
	return ed
}

func edgeIDs(es []postgram.Edge) []uuid.UUID {
	out := make([]uuid.UUID, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func entityIDs(es []*postgram.Entity) []uuid.UUID {
	out := make([]uuid.UUID, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func sameUUIDs(a, b []uuid.UUID) bool {
	if len(a) != len(b) {
		return false
	}
	x := append([]uuid.UUID(nil), a...)
	y := append([]uuid.UUID(nil), b...)
	sort.Slice(x, func(i, j int) bool { return x[i].String() < x[j].String() })
	sort.Slice(y, func(i, j int) bool { return y[i].String() < y[j].String() })
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

func testGraphLinkUnlink(t *testing.T, open Opener) {
	e := newEnv(t, open)
	alice := e.store1(postgram.StoreInput{Type: postgram.TypePerson, Content: "Alice Example"})
	atlas := e.store1(postgram.StoreInput{Type: postgram.TypeProject, Content: "Project Atlas"})
	conf := 0.8
	ed, err := e.c.Link(e.ctx, postgram.LinkInput{SourceID: atlas.ID, TargetID: alice.ID, Relation: " involves ",
		Confidence: &conf, Metadata: map[string]any{"note": "kickoff"}})
	if err != nil {
		t.Fatalf("Link: %v", err)
	}
	if ed.Relation != "involves" || ed.Source != postgram.EdgeSourceManual || ed.Confidence < 0.799 || ed.Confidence > 0.801 ||
		ed.SourceID != atlas.ID || ed.TargetID != alice.ID || ed.Metadata["note"] != "kickoff" || ed.OriginID != nil || ed.CreatedAt.IsZero() {
		t.Fatalf("linked edge = %+v", ed)
	}
	// Upsert on (source, target, relation): same id, new confidence, merged metadata.
	again, err := e.c.Link(e.ctx, postgram.LinkInput{SourceID: atlas.ID, TargetID: alice.ID, Relation: "involves",
		Metadata: map[string]any{"role": "lead"}})
	if err != nil {
		t.Fatalf("Link again: %v", err)
	}
	if again.ID != ed.ID || again.Confidence != 1 || again.Metadata["note"] != "kickoff" || again.Metadata["role"] != "lead" {
		t.Fatalf("upserted edge = %+v (first %s)", again, ed.ID)
	}
	// Another relation between the same pair is another edge.
	other := e.link(atlas.ID, alice.ID, "assigned_to")
	if other.ID == ed.ID {
		t.Fatalf("a different relation reused the edge id")
	}
	got, err := e.c.GetEdge(e.ctx, ed.ID)
	if err != nil || got.ID != ed.ID || got.Relation != "involves" {
		t.Fatalf("GetEdge = %+v, %v", got, err)
	}
	if err := e.c.Unlink(e.ctx, ed.ID); err != nil {
		t.Fatalf("Unlink: %v", err)
	}
	if err := e.c.Unlink(e.ctx, ed.ID); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("Unlink twice: %v, want not found", err)
	}
	if err := e.c.Unlink(e.ctx, uuid.New()); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("Unlink of an unknown edge: %v", err)
	}
	es, err := e.c.Edges(e.ctx, atlas.ID, postgram.EdgesOptions{})
	if err != nil || !sameUUIDs(edgeIDs(es), []uuid.UUID{other.ID}) {
		t.Fatalf("Edges after unlink = %v, %v", edgeIDs(es), err)
	}
	// Audit records both acts.
	log, err := e.admin().Audit(e.ctx, postgram.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for _, a := range log {
		ops[a.Operation]++
	}
	if ops["edge.link"] != 3 || ops["edge.unlink"] != 1 {
		t.Fatalf("audit operations = %v", ops)
	}
}

func testGraphLinkValidation(t *testing.T, open Opener) {
	e := newEnv(t, open)
	a := e.store1(postgram.StoreInput{Content: "a"})
	b := e.store1(postgram.StoreInput{Content: "b"})
	for _, tc := range []struct {
		name  string
		in    postgram.LinkInput
		field string
	}{
		{"self", postgram.LinkInput{SourceID: a.ID, TargetID: a.ID, Relation: "x"}, "target_id"},
		{"missing target", postgram.LinkInput{SourceID: a.ID, TargetID: uuid.New(), Relation: "x"}, "target_id"},
		{"missing source", postgram.LinkInput{SourceID: uuid.New(), TargetID: b.ID, Relation: "x"}, "source_id"},
		{"nil source", postgram.LinkInput{TargetID: b.ID, Relation: "x"}, "source_id"},
		{"empty relation", postgram.LinkInput{SourceID: a.ID, TargetID: b.ID, Relation: "  "}, "relation"},
		{"long relation", postgram.LinkInput{SourceID: a.ID, TargetID: b.ID, Relation: strings.Repeat("r", 101)}, "relation"},
		{"control relation", postgram.LinkInput{SourceID: a.ID, TargetID: b.ID, Relation: "a\nb"}, "relation"},
		{"confidence high", postgram.LinkInput{SourceID: a.ID, TargetID: b.ID, Relation: "x", Confidence: ptr(1.5)}, "confidence"},
		{"confidence low", postgram.LinkInput{SourceID: a.ID, TargetID: b.ID, Relation: "x", Confidence: ptr(-0.1)}, "confidence"},
	} {
		_, err := e.c.Link(e.ctx, tc.in)
		if !errors.Is(err, postgram.ErrInvalidArgument) || postgram.FieldOf(err) != tc.field {
			t.Errorf("%s: err = %v (field %q), want invalid %s", tc.name, err, postgram.FieldOf(err), tc.field)
		}
	}
	// A 100-character relation is fine.
	e.link(a.ID, b.ID, strings.Repeat("r", 100))
	es, _ := e.c.Edges(e.ctx, a.ID, postgram.EdgesOptions{})
	if len(es) != 1 {
		t.Fatalf("edges after the rejected links: %d, want 1", len(es))
	}
	if _, err := e.c.Edges(e.ctx, a.ID, postgram.EdgesOptions{Direction: "sideways"}); postgram.FieldOf(err) != "direction" {
		t.Fatalf("bad direction: %v", err)
	}
	if _, err := e.c.Edges(e.ctx, uuid.New(), postgram.EdgesOptions{}); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("edges of an unknown entity: %v", err)
	}
}

func testGraphEdges(t *testing.T, open Opener) {
	e := newEnv(t, open)
	a := e.store1(postgram.StoreInput{Content: "a"})
	b := e.store1(postgram.StoreInput{Content: "b"})
	c := e.store1(postgram.StoreInput{Content: "c"})
	ab := e.link(a.ID, b.ID, "involves", 0.9)
	ca := e.link(c.ID, a.ID, "mentioned_in", 0.5)
	ac := e.link(a.ID, c.ID, "involves", 0.7)
	for _, tc := range []struct {
		opts postgram.EdgesOptions
		want []uuid.UUID
	}{
		{postgram.EdgesOptions{}, []uuid.UUID{ab.ID, ac.ID, ca.ID}}, // by confidence
		{postgram.EdgesOptions{Direction: postgram.DirectionSource}, []uuid.UUID{ab.ID, ac.ID}},
		{postgram.EdgesOptions{Direction: postgram.DirectionTarget}, []uuid.UUID{ca.ID}},
		{postgram.EdgesOptions{Direction: "outgoing", Relation: "involves"}, []uuid.UUID{ab.ID, ac.ID}},
		{postgram.EdgesOptions{Relation: "mentioned_in"}, []uuid.UUID{ca.ID}},
		{postgram.EdgesOptions{Relation: "nothing"}, nil},
	} {
		es, err := e.c.Edges(e.ctx, a.ID, tc.opts)
		if err != nil {
			t.Fatalf("Edges(%+v): %v", tc.opts, err)
		}
		got := edgeIDs(es)
		if len(got) != len(tc.want) {
			t.Fatalf("Edges(%+v) = %v, want %v", tc.opts, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("Edges(%+v) = %v, want %v (in order)", tc.opts, got, tc.want)
			}
		}
	}
}

func testGraphExpand(t *testing.T, open Opener) {
	e := newEnv(t, open)
	// a -> b -> c -> d, and a side branch b -> x (low confidence), a -> y (other relation)
	n := map[string]*postgram.Entity{}
	for _, k := range []string{"a", "b", "c", "d", "x", "y", "z"} {
		n[k] = e.store1(postgram.StoreInput{Content: "node " + k})
	}
	ab := e.link(n["a"].ID, n["b"].ID, "part_of")
	bc := e.link(n["b"].ID, n["c"].ID, "part_of")
	cd := e.link(n["d"].ID, n["c"].ID, "part_of") // incoming edges are followed too
	bx := e.link(n["b"].ID, n["x"].ID, "part_of", 0.2)
	ay := e.link(n["a"].ID, n["y"].ID, "blocked_by")
	xy := e.link(n["x"].ID, n["y"].ID, "part_of")
	// z is archived: not reached by default.
	e.link(n["c"].ID, n["z"].ID, "part_of")
	if _, err := e.c.Delete(e.ctx, n["z"].ID); err != nil {
		t.Fatal(err)
	}
	ids := func(ks ...string) []uuid.UUID {
		var out []uuid.UUID
		for _, k := range ks {
			out = append(out, n[k].ID)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		opts      postgram.ExpandOptions
		nodes     []uuid.UUID
		edges     []uuid.UUID
		truncated bool
	}{
		{"depth 1", postgram.ExpandOptions{}, ids("a", "b", "y"), []uuid.UUID{ab.ID, ay.ID}, false},
		{"depth 2", postgram.ExpandOptions{Depth: 2}, ids("a", "b", "y", "c", "x"), []uuid.UUID{ab.ID, ay.ID, bc.ID, bx.ID, xy.ID}, false},
		{"depth 3", postgram.ExpandOptions{Depth: 3}, ids("a", "b", "y", "c", "x", "d"), []uuid.UUID{ab.ID, ay.ID, bc.ID, bx.ID, xy.ID, cd.ID}, false},
		{"relation", postgram.ExpandOptions{Depth: 3, RelationTypes: []string{"part_of"}}, ids("a", "b", "c", "x", "d", "y"),
			[]uuid.UUID{ab.ID, bc.ID, bx.ID, cd.ID, xy.ID}, false},
		{"min confidence", postgram.ExpandOptions{Depth: 3, MinConfidence: 0.5}, ids("a", "b", "y", "c", "x", "d"),
			[]uuid.UUID{ab.ID, ay.ID, bc.ID, xy.ID, cd.ID}, false}, // x via y, not via the weak b-x
		{"node cap", postgram.ExpandOptions{Depth: 3, MaxNodes: 3}, ids("a", "b", "y"), []uuid.UUID{ab.ID, ay.ID}, true},
		{"archived", postgram.ExpandOptions{Depth: 3, IncludeArchived: true}, ids("a", "b", "y", "c", "x", "d", "z"), nil, false},
	} {
		g, err := e.c.Expand(e.ctx, n["a"].ID, tc.opts)
		if err != nil {
			t.Fatalf("%s: Expand: %v", tc.name, err)
		}
		if g.Entities[0].ID != n["a"].ID || g.Depths[n["a"].ID] != 0 {
			t.Fatalf("%s: the seed is not first", tc.name)
		}
		if !sameUUIDs(entityIDs(g.Entities), tc.nodes) {
			t.Errorf("%s: nodes = %v, want %v", tc.name, entityIDs(g.Entities), tc.nodes)
		}
		if tc.edges != nil && !sameUUIDs(edgeIDs(g.Edges), tc.edges) {
			t.Errorf("%s: edges = %v, want %v", tc.name, edgeIDs(g.Edges), tc.edges)
		}
		if g.Truncated != tc.truncated {
			t.Errorf("%s: truncated = %v", tc.name, g.Truncated)
		}
	}
	g, _ := e.c.Expand(e.ctx, n["a"].ID, postgram.ExpandOptions{Depth: 3})
	if g.Depths[n["d"].ID] != 3 || g.Depths[n["c"].ID] != 2 || g.Depths[n["b"].ID] != 1 {
		t.Errorf("depths = %v", g.Depths)
	}
	for _, bad := range []struct {
		opts  postgram.ExpandOptions
		field string
	}{
		{postgram.ExpandOptions{Depth: 4}, "depth"},
		{postgram.ExpandOptions{Depth: -1}, "depth"},
		{postgram.ExpandOptions{MinConfidence: 2}, "min_confidence"},
		{postgram.ExpandOptions{MaxNodes: 5000}, "max_nodes"},
		{postgram.ExpandOptions{RelationTypes: []string{""}}, "relation_types[0]"},
	} {
		if _, err := e.c.Expand(e.ctx, n["a"].ID, bad.opts); postgram.FieldOf(err) != bad.field {
			t.Errorf("Expand(%+v): %v, want invalid %s", bad.opts, err, bad.field)
		}
	}
	if _, err := e.c.Expand(e.ctx, uuid.New(), postgram.ExpandOptions{}); !errors.Is(err, postgram.ErrNotFound) {
		t.Errorf("Expand of an unknown seed: %v", err)
	}
}

// testGraphExpandRanking checks Expand on a graph with hubs against a
// reference walk computed here from every edge: which entities each step
// reaches under tight and loose node caps (the best edge of each entity
// ranks it: confidence, then edge id, with many ties), with relation and
// confidence filters, archived ends, and a type-limited key, whose hidden
// ends a backend must skip without losing the entities behind them. Two
// hubs' most confident edges all lead to ends a caller cannot reach (people
// for the memory-only key, archived entities), so a backend that looks only
// at a hub's best edges must look further.
func testGraphExpandRanking(t *testing.T, open Opener) {
	e := newEnv(t, open)
	r := rand.New(rand.NewPCG(5, 8))
	const n = 90
	const peopleHub, archivedHub = n - 2, n - 1
	ents := make([]*postgram.Entity, n)
	for i := range ents {
		typ := postgram.TypeMemory
		if r.IntN(5) < 2 && i < peopleHub {
			typ = postgram.TypePerson
		}
		ents[i] = e.store1(postgram.StoreInput{Type: typ, Content: fmt.Sprintf("node %d", i)})
	}
	isArchived := func(i int) bool { return i%4 == 3 && i < peopleHub }
	// Two hubs (entities 0 and 1) with more edges than a step needs at
	// small caps, random edges among the rest (confidence 0 included), and
	// two hubs whose best edges lead to people and to archived entities.
	confs := []float64{0, 0.4, 0.6, 0.6, 0.8, 0.8, 0.8, 1}
	type pair struct{ a, b int }
	have := map[pair]bool{}
	var in []postgram.Edge
	add := func(a, b int, conf float64) {
		if a == b || have[pair{a, b}] || have[pair{b, a}] {
			return
		}
		have[pair{a, b}] = true
		if r.IntN(2) == 0 {
			a, b = b, a
		}
		now := time.Now().UTC()
		in = append(in, postgram.Edge{ID: uuid.New(), SourceID: ents[a].ID, TargetID: ents[b].ID,
			Relation: []string{"cites", "owns"}[r.IntN(2)], Confidence: conf,
			Source: postgram.EdgeSourceManual, Metadata: map[string]any{}, CreatedAt: now, UpdatedAt: now})
	}
	randConf := func() float64 { return confs[r.IntN(len(confs))] }
	for i := 2; i < peopleHub; i++ {
		if i < 72 {
			add(0, i, randConf())
		}
		if i%2 == 0 {
			add(1, i, randConf())
		}
		switch {
		case ents[i].Type == postgram.TypePerson:
			add(peopleHub, i, 1)
		case i%3 == 0:
			add(peopleHub, i, 0.5)
		}
		switch {
		case isArchived(i):
			add(archivedHub, i, 1)
		case i%5 == 0:
			add(archivedHub, i, 0.7)
		}
	}
	for range 120 {
		add(2+r.IntN(n-4), 2+r.IntN(n-4), randConf())
	}
	edges, err := e.store.UpsertEdges(e.ctx, e.c.Workspace(), in, nil)
	if err != nil || len(edges) != len(in) {
		t.Fatalf("UpsertEdges: %d of %d, %v", len(edges), len(in), err)
	}
	archived := map[uuid.UUID]bool{}
	for i := range ents {
		if isArchived(i) {
			if _, err := e.c.Delete(e.ctx, ents[i].ID); err != nil {
				t.Fatal(err)
			}
			archived[ents[i].ID] = true
		}
	}
	typeOf := map[uuid.UUID]postgram.EntityType{}
	for _, x := range ents {
		typeOf[x.ID] = x.Type
	}
	memOnly := e.admin().As(postgram.Principal{Scopes: postgram.AllScopes, AllowedTypes: []postgram.EntityType{postgram.TypeMemory}})
	for _, who := range []struct {
		name string
		c    *postgram.Client
		sees func(uuid.UUID) bool
	}{
		{"admin", e.c, func(uuid.UUID) bool { return true }},
		{"memory-only key", memOnly, func(id uuid.UUID) bool { return typeOf[id] == postgram.TypeMemory }},
	} {
		for _, seed := range []*postgram.Entity{ents[0], ents[1], ents[2], ents[5], ents[80], ents[peopleHub], ents[archivedHub]} {
			if !who.sees(seed.ID) {
				continue
			}
			for _, opts := range []postgram.ExpandOptions{
				{Depth: 1, MaxNodes: 1}, {Depth: 1, MaxNodes: 2}, {Depth: 1, MaxNodes: 5}, {Depth: 1, MaxNodes: 1000},
				{Depth: 2, MaxNodes: 4}, {Depth: 2, MaxNodes: 12}, {Depth: 2, MaxNodes: 40}, {Depth: 2},
				{Depth: 3, MaxNodes: 9}, {Depth: 3, MaxNodes: 30}, {Depth: 3, MaxNodes: 1000},
				{Depth: 2, MaxNodes: 12, IncludeArchived: true}, {Depth: 3, MaxNodes: 25, IncludeArchived: true},
				{Depth: 2, MaxNodes: 10, RelationTypes: []string{"owns"}}, {Depth: 3, MaxNodes: 30, MinConfidence: 0.8},
			} {
				name := fmt.Sprintf("%s from %s, %+v", who.name, seed.Content, opts)
				g, err := who.c.Expand(e.ctx, seed.ID, opts)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				visible := func(id uuid.UUID) bool { return who.sees(id) && (opts.IncludeArchived || !archived[id]) }
				want := referenceExpand(seed.ID, opts, edges, visible)
				if got := entityIDs(g.Entities); !slices.Equal(got, want.order) {
					t.Errorf("%s: entities\n got %v\nwant %v", name, got, want.order)
				}
				for _, id := range want.order {
					if g.Depths[id] != want.depths[id] {
						t.Errorf("%s: depth of %s = %d, want %d", name, id, g.Depths[id], want.depths[id])
					}
				}
				if !sameUUIDs(edgeIDs(g.Edges), want.edges) {
					t.Errorf("%s: edges = %v, want %v", name, edgeIDs(g.Edges), want.edges)
				}
				if g.Truncated != want.truncated {
					t.Errorf("%s: truncated = %v, want %v", name, g.Truncated, want.truncated)
				}
			}
		}
	}
}

// referenceWalk is what Expand must return.
type referenceWalk struct {
	order     []uuid.UUID
	depths    map[uuid.UUID]int
	edges     []uuid.UUID
	truncated bool
}

// referenceExpand walks edges as Expand specifies: breadth-first from seed,
// each step ranking the unseen visible ends of the admitted edges incident
// to the frontier by their best edge (confidence, then id), taking as many
// as the node cap leaves room for.
func referenceExpand(seed uuid.UUID, opts postgram.ExpandOptions, edges []postgram.Edge, visible func(uuid.UUID) bool) referenceWalk {
	if opts.Depth == 0 {
		opts.Depth = 1
	}
	if opts.MaxNodes == 0 {
		opts.MaxNodes = postgram.DefaultExpandNodes
	}
	admit := func(ed postgram.Edge) bool {
		return ed.Confidence >= opts.MinConfidence && (len(opts.RelationTypes) == 0 || slices.Contains(opts.RelationTypes, ed.Relation))
	}
	better := func(a, b postgram.Edge) bool {
		if a.Confidence != b.Confidence {
			return a.Confidence > b.Confidence
		}
		return bytes.Compare(a.ID[:], b.ID[:]) < 0
	}
	w := referenceWalk{order: []uuid.UUID{seed}, depths: map[uuid.UUID]int{seed: 0}}
	frontier := []uuid.UUID{seed}
	for d := 1; d <= opts.Depth && len(frontier) > 0 && !w.truncated; d++ {
		best := map[uuid.UUID]postgram.Edge{}
		for _, ed := range edges {
			if !admit(ed) {
				continue
			}
			for _, end := range [][2]uuid.UUID{{ed.SourceID, ed.TargetID}, {ed.TargetID, ed.SourceID}} {
				if !slices.Contains(frontier, end[0]) {
					continue
				}
				other := end[1]
				if _, seen := w.depths[other]; seen || !visible(other) {
					continue
				}
				if b, ok := best[other]; !ok || better(ed, b) {
					best[other] = ed
				}
			}
		}
		next := make([]uuid.UUID, 0, len(best))
		for id := range best {
			next = append(next, id)
		}
		slices.SortFunc(next, func(a, b uuid.UUID) int {
			if better(best[a], best[b]) {
				return -1
			}
			if better(best[b], best[a]) {
				return 1
			}
			return cmp.Compare(a.String(), b.String())
		})
		if room := opts.MaxNodes - len(w.order); len(next) > room {
			next, w.truncated = next[:room], true
		}
		for _, id := range next {
			w.depths[id] = d
		}
		w.order = append(w.order, next...)
		frontier = next
	}
	for _, ed := range edges {
		_, a := w.depths[ed.SourceID]
		_, b := w.depths[ed.TargetID]
		if a && b && admit(ed) {
			w.edges = append(w.edges, ed.ID)
		}
	}
	return w
}

func testGraphAccess(t *testing.T, open Opener) {
	e := newEnv(t, open)
	pub := e.store1(postgram.StoreInput{Content: "shared hub", Visibility: postgram.VisibilityShared})
	secret := e.store1(postgram.StoreInput{Content: "personal secret", Visibility: postgram.VisibilityPersonal})
	beyond := e.store1(postgram.StoreInput{Content: "reachable only through the secret", Visibility: postgram.VisibilityShared})
	friend := e.store1(postgram.StoreInput{Type: postgram.TypePerson, Content: "a friend", Visibility: postgram.VisibilityShared})
	hidden := e.link(pub.ID, secret.ID, "mentions")
	e.link(secret.ID, beyond.ID, "mentions")
	open1 := e.link(pub.ID, friend.ID, "involves")
	// Session context of another client.
	agentA := e.admin().As(postgram.Principal{ClientID: "agent-a", Scopes: postgram.AllScopes})
	sc := mustStore(t, agentA, postgram.StoreInput{Content: "scratch", Metadata: map[string]any{"memory_role": "session_context"}})
	scEdge := mustLink(t, agentA, sc.ID, pub.ID, "about")

	ro := e.admin().As(postgram.Principal{ClientID: "agent-b", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite},
		AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})
	es, err := ro.Edges(e.ctx, pub.ID, postgram.EdgesOptions{})
	if err != nil || !sameUUIDs(edgeIDs(es), []uuid.UUID{open1.ID}) {
		t.Fatalf("Edges for a limited key = %v, %v; want only %s", edgeIDs(es), err, open1.ID)
	}
	if _, err := ro.Edges(e.ctx, secret.ID, postgram.EdgesOptions{}); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("Edges of a hidden entity: %v", err)
	}
	g, err := ro.Expand(e.ctx, pub.ID, postgram.ExpandOptions{Depth: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !sameUUIDs(entityIDs(g.Entities), []uuid.UUID{pub.ID, friend.ID}) || !sameUUIDs(edgeIDs(g.Edges), []uuid.UUID{open1.ID}) {
		t.Fatalf("Expand for a limited key reached %v via %v", entityIDs(g.Entities), edgeIDs(g.Edges))
	}
	if _, err := ro.Expand(e.ctx, secret.ID, postgram.ExpandOptions{}); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("Expand from a hidden seed: %v", err)
	}
	if _, err := ro.GetEdge(e.ctx, hidden.ID); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("GetEdge of an edge to a hidden entity: %v", err)
	}
	if err := ro.Unlink(e.ctx, hidden.ID); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("Unlink of an edge to a hidden entity: %v", err)
	}
	if err := ro.Unlink(e.ctx, scEdge.ID); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("Unlink of another client's session-context edge: %v", err)
	}
	if _, err := ro.Link(e.ctx, postgram.LinkInput{SourceID: pub.ID, TargetID: secret.ID, Relation: "x"}); postgram.FieldOf(err) != "target_id" {
		t.Fatalf("Link to a hidden entity: %v", err)
	}
	if _, err := ro.Link(e.ctx, postgram.LinkInput{SourceID: sc.ID, TargetID: pub.ID, Relation: "x"}); postgram.FieldOf(err) != "source_id" {
		t.Fatalf("Link from another client's session context: %v", err)
	}
	// The writing client sees its session context's edge.
	if es, _ := agentA.Edges(e.ctx, pub.ID, postgram.EdgesOptions{Relation: "about"}); len(es) != 1 {
		t.Fatalf("own session-context edge not listed: %v", edgeIDs(es))
	}
	readOnly := e.admin().As(postgram.Principal{Scopes: []postgram.Scope{postgram.ScopeRead}})
	if _, err := readOnly.Link(e.ctx, postgram.LinkInput{SourceID: pub.ID, TargetID: friend.ID, Relation: "x"}); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("Link without write scope: %v", err)
	}
	if err := readOnly.Unlink(e.ctx, open1.ID); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("Unlink without write scope: %v", err)
	}
	// Search edge summaries and expand_graph count only visible ends.
	e.enrich()
	r := mustSearch(t, ro, postgram.SearchRequest{Query: "shared hub", ExpandGraph: true})
	for _, res := range r.Results {
		if res.Entity.ID != pub.ID {
			continue
		}
		if res.Edges == nil || res.Edges.Count != 1 || len(res.Related) != 1 || res.Related[0].Entity.ID != friend.ID {
			t.Fatalf("search summary for a limited key: %+v related %+v", res.Edges, res.Related)
		}
		return
	}
	t.Fatalf("search did not find the hub: %v", ids(r))
}

func testGraphPrecedence(t *testing.T, open Opener) {
	e := newEnv(t, open)
	a := e.store1(postgram.StoreInput{Content: "a"})
	b := e.store1(postgram.StoreInput{Content: "b"})
	c := e.store1(postgram.StoreInput{Content: "c"})
	manual := e.link(a.ID, b.ID, "involves")
	now := time.Now().UTC()
	origin := a.ID
	derived := func(src, dst uuid.UUID, rel, source string, conf float64) postgram.Edge {
		return postgram.Edge{ID: uuid.New(), SourceID: src, TargetID: dst, Relation: rel, Confidence: conf, Source: source,
			Metadata: map[string]any{"k": source}, OriginID: &origin, Provider: "test", Model: "m1", PromptVersion: "v1",
			CreatedAt: now, UpdatedAt: now}
	}
	// LLM edges never overwrite the manual edge; they add others.
	n, err := e.store.ReplaceDerivedEdges(e.ctx, e.c.Workspace(), a.ID, postgram.EdgeSourceLLM, []postgram.Edge{
		derived(a.ID, b.ID, "involves", postgram.EdgeSourceLLM, 0.4),
		derived(a.ID, c.ID, "mentions", postgram.EdgeSourceLLM, 0.6),
	}, nil)
	if err != nil || n != 0 {
		t.Fatalf("ReplaceDerivedEdges: %d, %v", n, err)
	}
	got, _ := e.c.GetEdge(e.ctx, manual.ID)
	if got.Source != postgram.EdgeSourceManual || got.Confidence != 1 || got.OriginID != nil {
		t.Fatalf("manual edge overwritten: %+v", got)
	}
	es, _ := e.c.Edges(e.ctx, a.ID, postgram.EdgesOptions{Relation: "mentions"})
	if len(es) != 1 || es[0].Source != postgram.EdgeSourceLLM || es[0].OriginID == nil || *es[0].OriginID != a.ID ||
		es[0].Provider != "test" || es[0].Model != "m1" || es[0].PromptVersion != "v1" {
		t.Fatalf("derived edge provenance: %+v", es)
	}
	// A semantic neighbour does not shadow the LLM edge.
	if _, err := e.store.UpsertEdges(e.ctx, e.c.Workspace(), []postgram.Edge{derived(a.ID, c.ID, "mentions", postgram.EdgeSourceNeighbor, 0.9)}, nil); err != nil {
		t.Fatal(err)
	}
	es, _ = e.c.Edges(e.ctx, a.ID, postgram.EdgesOptions{Relation: "mentions"})
	if es[0].Source != postgram.EdgeSourceLLM {
		t.Fatalf("semantic neighbour replaced an LLM edge: %+v", es[0])
	}
	// Re-extraction replaces exactly the edges of that origin and source.
	n, err = e.store.ReplaceDerivedEdges(e.ctx, e.c.Workspace(), a.ID, postgram.EdgeSourceLLM, nil, nil)
	if err != nil || n != 1 {
		t.Fatalf("retract: %d, %v", n, err)
	}
	es, _ = e.c.Edges(e.ctx, a.ID, postgram.EdgesOptions{})
	if !sameUUIDs(edgeIDs(es), []uuid.UUID{manual.ID}) {
		t.Fatalf("after retraction: %+v", es)
	}
	// A manual Link takes over a derived edge.
	if _, err := e.store.UpsertEdges(e.ctx, e.c.Workspace(), []postgram.Edge{derived(b.ID, c.ID, "part_of", postgram.EdgeSourceLLM, 0.3)}, nil); err != nil {
		t.Fatal(err)
	}
	took := e.link(b.ID, c.ID, "part_of")
	if took.Source != postgram.EdgeSourceManual || took.Confidence != 1 || took.OriginID != nil || took.Provider != "" {
		t.Fatalf("manual link over a derived edge: %+v", took)
	}
	if n, _ := e.store.ReplaceDerivedEdges(e.ctx, e.c.Workspace(), a.ID, postgram.EdgeSourceLLM, nil, nil); n != 0 {
		t.Fatalf("retraction touched a manual edge")
	}
	// FindEdges by source and confidence (the maintenance queries).
	if _, err := e.store.UpsertEdges(e.ctx, e.c.Workspace(), []postgram.Edge{
		derived(c.ID, a.ID, "weak", postgram.EdgeSourceLLM, 0.2),
		derived(c.ID, b.ID, "strong", postgram.EdgeSourceLLM, 0.9),
	}, nil); err != nil {
		t.Fatal(err)
	}
	low, err := e.store.FindEdges(e.ctx, e.c.Workspace(), driver.EdgeQuery{Sources: []string{postgram.EdgeSourceLLM}, Below: 0.5})
	if err != nil || len(low) != 1 || low[0].Relation != "weak" {
		t.Fatalf("FindEdges below 0.5: %+v, %v", low, err)
	}
	byOrigin, err := e.store.FindEdges(e.ctx, e.c.Workspace(), driver.EdgeQuery{OriginIDs: []uuid.UUID{a.ID}})
	if err != nil || len(byOrigin) != 2 {
		t.Fatalf("FindEdges by origin: %+v, %v", byOrigin, err)
	}
}

func testGraphSearch(t *testing.T, open Opener) {
	e := newEnv(t, open)
	hub := e.store1(postgram.StoreInput{Content: "the capybara migration plan"})
	p1 := e.store1(postgram.StoreInput{Type: postgram.TypePerson, Content: "Carla"})
	p2 := e.store1(postgram.StoreInput{Type: postgram.TypePerson, Content: "Dmitri"})
	d := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: "design doc"})
	e.link(hub.ID, p1.ID, "involves")
	e.link(hub.ID, p2.ID, "involves")
	e.link(d.ID, hub.ID, "part_of")
	e.enrich()
	r := e.search(postgram.SearchRequest{Query: "capybara", ExpandGraph: true})
	if len(r.Results) == 0 || r.Results[0].Entity.ID != hub.ID {
		t.Fatalf("search: %v", ids(r))
	}
	res := r.Results[0]
	if res.Edges == nil || res.Edges.Count != 3 || len(res.Edges.Relations) != 2 ||
		res.Edges.Relations[0] != (driver.RelationCount{Relation: "involves", Count: 2}) {
		t.Fatalf("edge summary = %+v", res.Edges)
	}
	if len(res.Related) != 3 {
		t.Fatalf("related = %+v", res.Related)
	}
}

func testGraphNeighbors(t *testing.T, open Opener) {
	e := newEnv(t, open)
	a := e.store1(postgram.StoreInput{Content: "walrus colony migration along the arctic coast in early spring"})
	b := e.store1(postgram.StoreInput{Content: "walrus colony migration along the arctic coast in late spring"})
	c := e.store1(postgram.StoreInput{Content: "walrus colony migration along the arctic shore in spring"})
	far := e.store1(postgram.StoreInput{Content: "quarterly budget spreadsheet for the finance team"})
	sc := e.store1(postgram.StoreInput{Content: "walrus colony migration along the arctic coast in early spring",
		Metadata: map[string]any{"memory_role": "session_context"}})
	e.enrich()
	// An LLM edge between a and c: the pair is skipped.
	origin := a.ID
	now := time.Now().UTC()
	if _, err := e.store.UpsertEdges(e.ctx, e.c.Workspace(), []postgram.Edge{{ID: uuid.New(), SourceID: c.ID, TargetID: a.ID,
		Relation: "describes", Confidence: 0.8, Source: postgram.EdgeSourceLLM, Metadata: map[string]any{}, OriginID: &origin,
		CreatedAt: now, UpdatedAt: now}}, nil); err != nil {
		t.Fatal(err)
	}
	dry, err := e.admin().LinkNeighbors(e.ctx, a.ID, postgram.NeighborOptions{MinSimilarity: 0.5, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Neighbors) != 1 || dry.Neighbors[0].EntityID != b.ID || dry.Written != 0 || dry.Neighbors[0].Similarity < 0.5 {
		t.Fatalf("dry run = %+v (want only b: c is LLM-linked, far is dissimilar, sc is session context)", dry)
	}
	if es, _ := e.c.Edges(e.ctx, a.ID, postgram.EdgesOptions{Relation: postgram.RelationRelatedTo}); len(es) != 0 {
		t.Fatalf("dry run wrote edges")
	}
	for i := 0; i < 2; i++ { // idempotent
		res, err := e.admin().LinkNeighbors(e.ctx, a.ID, postgram.NeighborOptions{MinSimilarity: 0.5})
		if err != nil || res.Written != 1 {
			t.Fatalf("LinkNeighbors #%d = %+v, %v", i, res, err)
		}
	}
	es, _ := e.c.Edges(e.ctx, a.ID, postgram.EdgesOptions{Relation: postgram.RelationRelatedTo})
	if len(es) != 1 || !sameUUIDs([]uuid.UUID{es[0].SourceID, es[0].TargetID}, []uuid.UUID{a.ID, b.ID}) || es[0].Source != postgram.EdgeSourceNeighbor ||
		es[0].OriginID == nil || *es[0].OriginID != a.ID || es[0].Metadata["similarity"] == nil {
		t.Fatalf("neighbour edges = %+v", es)
	}
	// b's own pass does not add the reverse related_to edge.
	res, err := e.admin().LinkNeighbors(e.ctx, b.ID, postgram.NeighborOptions{MinSimilarity: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	for _, nb := range res.Neighbors {
		if nb.EntityID == a.ID {
			t.Fatalf("reverse neighbour edge: %+v", res)
		}
	}
	if res, _ := e.admin().LinkNeighbors(e.ctx, a.ID, postgram.NeighborOptions{MinSimilarity: 0.99}); res.Written != 0 || res.Removed != 1 {
		t.Fatalf("a stricter pass keeps stale edges: %+v", res)
	}
	if res, _ := e.admin().LinkNeighbors(e.ctx, sc.ID, postgram.NeighborOptions{}); res.Skipped == "" {
		t.Fatalf("session context was linked: %+v", res)
	}
	if res, _ := e.admin().LinkNeighbors(e.ctx, far.ID, postgram.NeighborOptions{MinSimilarity: 0.9}); len(res.Neighbors) != 0 {
		t.Fatalf("dissimilar entity linked: %+v", res)
	}
	// Every pass that changed an entity's edges is audited with it (issue
	// 14): a's two writing passes and the stricter one that removed its
	// edge; not the dry run, nor passes that changed nothing.
	audit, err := e.admin().Audit(e.ctx, postgram.AuditFilter{Operation: "edge.link_neighbors"})
	if err != nil {
		t.Fatal(err)
	}
	var ofA []postgram.AuditEntry
	for _, x := range audit {
		switch x.EntityID {
		case a.ID.String():
			ofA = append(ofA, x)
		case far.ID.String(), sc.ID.String():
			t.Fatalf("a pass that changed nothing was audited: %+v", x)
		}
	}
	num := func(v any) int { f, _ := v.(float64); return int(f) }
	if len(ofA) != 3 || num(ofA[0].Details["written"]) != 0 || num(ofA[0].Details["replaced"]) != 1 ||
		num(ofA[1].Details["written"]) != 1 || num(ofA[1].Details["replaced"]) != 1 ||
		num(ofA[2].Details["written"]) != 1 || num(ofA[2].Details["replaced"]) != 0 {
		t.Fatalf("link-neighbors audit of a: %+v", ofA)
	}
	if _, err := e.admin().As(postgram.Principal{Scopes: postgram.AllScopes}).Admin(); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("LinkNeighbors for a key: %v", err)
	}
	if _, err := e.admin().LinkNeighbors(e.ctx, a.ID, postgram.NeighborOptions{MaxNeighbors: 1000}); postgram.FieldOf(err) != "max_neighbors" {
		t.Fatalf("bad max_neighbors: %v", err)
	}
}

func testGraphWorkspaces(t *testing.T, open Opener) {
	e := newEnv(t, open)
	a := e.store1(postgram.StoreInput{Content: "a"})
	b := e.store1(postgram.StoreInput{Content: "b"})
	ed := e.link(a.ID, b.ID, "x")
	other := e.client(func(c *postgram.Config) { c.Workspace = "other" })
	if _, err := other.GetEdge(e.ctx, ed.ID); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("edge visible across workspaces: %v", err)
	}
	if err := other.Unlink(e.ctx, ed.ID); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("unlink across workspaces: %v", err)
	}
	if _, err := other.Link(e.ctx, postgram.LinkInput{SourceID: a.ID, TargetID: b.ID, Relation: "x"}); postgram.FieldOf(err) != "source_id" {
		t.Fatalf("link across workspaces: %v", err)
	}
}
