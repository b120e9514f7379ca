package postgram

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/validate"
)

// parseDirection accepts source/target/both and the aliases
// outgoing/incoming; "" is both.
func parseDirection(field string, d EdgeDirection) (EdgeDirection, error) {
	switch strings.ToLower(strings.TrimSpace(string(d))) {
	case "", "both":
		return DirectionBoth, nil
	case "source", "outgoing", "out":
		return DirectionSource, nil
	case "target", "incoming", "in":
		return DirectionTarget, nil
	}
	return "", validate.Invalid(field, "%q is not one of source, target, both", validate.Truncate(string(d), 40))
}

func validateConfidence(field string, v float64) error {
	if math.IsNaN(v) || v < 0 || v > 1 {
		return validate.Invalid(field, "must be between 0 and 1")
	}
	return nil
}

func normalizeRelations(field string, rs []string) ([]string, error) {
	var out []string
	for i, r := range rs {
		n, err := validate.Relation(fmt.Sprintf("%s[%d]", field, i), r)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// graph returns the backend's graph storage.
func (c *core) graph() driver.GraphStorage { return c.store }

// visibleFilter is the filter an end of an edge must pass for the caller
// to see it.
func (c *Client) visibleFilter(includeArchived bool) (*driver.EntityFilter, bool) {
	f, ok := c.principal.restrict(driver.EntityFilter{IncludeArchived: includeArchived})
	return &f, ok
}

// LinkInput is what Link accepts.
type LinkInput struct {
	SourceID uuid.UUID `json:"source_id"`
	TargetID uuid.UUID `json:"target_id"`
	Relation string    `json:"relation"`
	// Confidence defaults to 1.0 (a manual edge is certain).
	Confidence *float64       `json:"confidence,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// Link creates a manual edge, or updates the edge with the same source,
// target and relation (its confidence and source become the new ones, its
// metadata is merged). Both ends must be entities the caller may see;
// self-edges are rejected.
func (c *Client) Link(ctx context.Context, in LinkInput) (*Edge, error) {
	if err := c.principal.need(ScopeWrite, "link"); err != nil {
		return nil, err
	}
	rel, err := validate.Relation("relation", in.Relation)
	if err != nil {
		return nil, err
	}
	conf := 1.0
	if in.Confidence != nil {
		conf = *in.Confidence
	}
	if err := validateConfidence("confidence", conf); err != nil {
		return nil, err
	}
	if err := validateMetadata("metadata", in.Metadata); err != nil {
		return nil, err
	}
	if in.SourceID == uuid.Nil {
		return nil, validate.Invalid("source_id", "is required")
	}
	if in.TargetID == uuid.Nil {
		return nil, validate.Invalid("target_id", "is required")
	}
	if in.SourceID == in.TargetID {
		return nil, validate.Invalid("target_id", "must differ from source_id (an entity cannot link to itself)")
	}
	for _, end := range []struct {
		field string
		id    uuid.UUID
	}{{"source_id", in.SourceID}, {"target_id", in.TargetID}} {
		if _, err := c.get(ctx, end.id); err != nil {
			if errIs(err, ErrNotFound) {
				return nil, validate.Invalid(end.field, "entity %s does not exist or is not visible to this key", end.id)
			}
			return nil, fmt.Errorf("link: %w", err)
		}
	}
	now := c.now()
	meta := driver.CloneMetadata(in.Metadata)
	if meta == nil {
		meta = map[string]any{}
	}
	e := Edge{ID: newID(), SourceID: in.SourceID, TargetID: in.TargetID, Relation: rel, Confidence: conf,
		Source: EdgeSourceManual, Metadata: meta, CreatedAt: now, UpdatedAt: now}
	audit := c.auditEntry("edge.link", in.SourceID.String(), map[string]any{"target_id": in.TargetID.String(), "relation": rel})
	out, err := c.graph().UpsertEdges(ctx, c.ws, []Edge{e}, audit)
	if err != nil {
		return nil, fmt.Errorf("link: %w", err)
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("link: the store wrote %d edges, want 1", len(out))
	}
	return &out[0], nil
}

// visibleEdge loads an edge both of whose ends the caller may see; others
// are not found.
func (c *Client) visibleEdge(ctx context.Context, id uuid.UUID) (*Edge, error) {
	e, err := c.graph().GetEdge(ctx, c.ws, id)
	if err != nil {
		return nil, err
	}
	if c.principal != nil {
		ends, err := c.store.GetEntities(ctx, c.ws, []uuid.UUID{e.SourceID, e.TargetID})
		if err != nil {
			return nil, err
		}
		seen := 0
		for _, x := range ends {
			if c.canSee(x) {
				seen++
			}
		}
		if seen != 2 {
			return nil, fmt.Errorf("edge %s: %w", id, ErrNotFound)
		}
	}
	return e, nil
}

// GetEdge returns one edge the caller may see (both of its ends).
func (c *Client) GetEdge(ctx context.Context, id uuid.UUID) (*Edge, error) {
	if err := c.principal.need(ScopeRead, "get edge"); err != nil {
		return nil, err
	}
	e, err := c.visibleEdge(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get edge: %w", err)
	}
	return e, nil
}

// Unlink deletes an edge, whatever made it. The caller must be able to see
// both of its ends; otherwise the edge is not found.
func (c *Client) Unlink(ctx context.Context, id uuid.UUID) error {
	if err := c.principal.need(ScopeWrite, "unlink"); err != nil {
		return err
	}
	e, err := c.visibleEdge(ctx, id)
	if err != nil {
		return fmt.Errorf("unlink: %w", err)
	}
	audit := c.auditEntry("edge.unlink", e.SourceID.String(), map[string]any{"edge_id": id.String(),
		"target_id": e.TargetID.String(), "relation": e.Relation, "source": e.Source})
	n, err := c.graph().DeleteEdges(ctx, c.ws, []uuid.UUID{id}, audit)
	if err != nil {
		return fmt.Errorf("unlink: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("unlink: edge %s: %w", id, ErrNotFound)
	}
	return nil
}

// EdgesOptions filters Edges.
type EdgesOptions struct {
	// Relation, when set, keeps only edges with this relation.
	Relation string
	// Direction: source (the entity is the edge's source), target, or both
	// (default).
	Direction EdgeDirection
}

// Edges lists an entity's edges whose other end the caller may see,
// highest confidence first.
func (c *Client) Edges(ctx context.Context, id uuid.UUID, opts EdgesOptions) ([]Edge, error) {
	if err := c.principal.need(ScopeRead, "edges"); err != nil {
		return nil, err
	}
	dir, err := parseDirection("direction", opts.Direction)
	if err != nil {
		return nil, err
	}
	q := driver.EdgeQuery{IDs: []uuid.UUID{id}, Direction: dir}
	if strings.TrimSpace(opts.Relation) != "" {
		r, err := validate.Relation("relation", opts.Relation)
		if err != nil {
			return nil, err
		}
		q.Relations = []string{r}
	}
	if _, err := c.get(ctx, id); err != nil {
		return nil, fmt.Errorf("edges: %w", err)
	}
	f, ok := c.visibleFilter(true)
	if !ok {
		return []Edge{}, nil
	}
	q.Filter = f
	out, err := c.graph().FindEdges(ctx, c.ws, q)
	if err != nil {
		return nil, fmt.Errorf("edges: %w", err)
	}
	if out == nil {
		out = []Edge{}
	}
	return out, nil
}

// ExpandOptions controls Expand.
type ExpandOptions struct {
	// Depth is how many hops to follow, 1 to 3. Default 1.
	Depth int
	// RelationTypes, when non-empty, follows only these relations.
	RelationTypes []string
	// MinConfidence follows only edges at least this confident (0..1).
	MinConfidence float64
	// MaxNodes caps the entities returned, seed included: nearer entities
	// first, then more confident edges. Default 100, at most 1000.
	MaxNodes int
	// IncludeArchived also follows edges to archived entities.
	IncludeArchived bool
}

// Graph is a neighbourhood: the entities reached and every edge among
// them that the expansion's filters admit.
type Graph struct {
	SeedID   uuid.UUID `json:"seed_id"`
	Entities []*Entity `json:"entities"`
	Edges    []Edge    `json:"edges"`
	// Depth of each entity from the seed, by id.
	Depths map[uuid.UUID]int `json:"depths,omitempty"`
	// Truncated is true when MaxNodes stopped the expansion.
	Truncated bool `json:"truncated,omitempty"`
}

// expandLoadBatch is how many entities Expand loads per store call.
const expandLoadBatch = 50

// fitting counts how many nodes of an expansion (the seed, then order)
// fit in budget bytes of content.
func (c *Client) fitting(seed *Entity, order []uuid.UUID, byID map[uuid.UUID]*Entity, budget int64) int {
	size, n := int64(len(seed.Content)), 1
	if size > budget {
		return 0
	}
	for _, x := range order {
		e := byID[x]
		if e == nil {
			continue
		}
		if size += int64(len(e.Content)); size > budget {
			break
		}
		n++
	}
	return n
}

// Expand walks the graph breadth-first from id, up to opts.Depth hops in
// either direction, and returns the entities reached (the seed first, then
// by depth) with every edge among them. Entities and edges the caller may
// not see are neither returned nor followed. A result whose contents exceed
// Config.MaxResultBytes is refused with a validation error on max_nodes.
func (c *Client) Expand(ctx context.Context, id uuid.UUID, opts ExpandOptions) (*Graph, error) {
	if err := c.principal.need(ScopeRead, "expand"); err != nil {
		return nil, err
	}
	if opts.Depth == 0 {
		opts.Depth = DefaultExpandDepth
	}
	if opts.Depth < 1 || opts.Depth > MaxExpandDepth {
		return nil, validate.Invalid("depth", "must be between 1 and %d", MaxExpandDepth)
	}
	if opts.MaxNodes == 0 {
		opts.MaxNodes = DefaultExpandNodes
	}
	if opts.MaxNodes < 1 || opts.MaxNodes > MaxExpandNodes {
		return nil, validate.Invalid("max_nodes", "must be between 1 and %d", MaxExpandNodes)
	}
	if err := validateConfidence("min_confidence", opts.MinConfidence); err != nil {
		return nil, err
	}
	rels, err := normalizeRelations("relation_types", opts.RelationTypes)
	if err != nil {
		return nil, err
	}
	seed, err := c.get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("expand: %w", err)
	}
	g := &Graph{SeedID: id, Entities: []*Entity{seed}, Edges: []Edge{}, Depths: map[uuid.UUID]int{id: 0}}
	f, ok := c.visibleFilter(opts.IncludeArchived)
	if !ok {
		return g, nil
	}
	order := []uuid.UUID{id}
	frontier := []uuid.UUID{id}
	for d := 1; d <= opts.Depth && len(frontier) > 0 && !g.Truncated; d++ {
		next, more, err := c.graph().ExpandLevel(ctx, c.ws, driver.ExpandLevelQuery{Frontier: frontier, Seen: order,
			Relations: rels, MinConfidence: opts.MinConfidence, Filter: f, Limit: opts.MaxNodes - len(order)})
		if err != nil {
			return nil, fmt.Errorf("expand: %w", err)
		}
		for _, x := range next {
			g.Depths[x] = d
		}
		order = append(order, next...)
		frontier, g.Truncated = next, more
	}
	if len(order) > 1 {
		// Loaded in batches so that a result over the byte budget is
		// refused before it is all in memory.
		byID := make(map[uuid.UUID]*Entity, len(order)-1)
		size := int64(len(seed.Content))
		for start := 1; start < len(order); start += expandLoadBatch {
			ents, err := c.store.GetEntities(ctx, c.ws, order[start:min(start+expandLoadBatch, len(order))])
			if err != nil {
				return nil, fmt.Errorf("expand: %w", err)
			}
			for _, e := range ents {
				if c.canSee(e) {
					byID[e.ID] = e
					size += int64(len(e.Content))
				}
			}
			if b := c.resultBudget(); b > 0 && size > b {
				return nil, c.tooLarge("max_nodes", c.fitting(seed, order[1:], byID, b))
			}
		}
		for _, x := range order[1:] {
			if e := byID[x]; e != nil {
				g.Entities = append(g.Entities, e)
			} else {
				delete(g.Depths, x) // vanished meanwhile
			}
		}
		es, err := c.graph().FindEdges(ctx, c.ws, driver.EdgeQuery{IDs: order, Among: true,
			Relations: rels, MinConfidence: opts.MinConfidence})
		if err != nil {
			return nil, fmt.Errorf("expand: %w", err)
		}
		for _, e := range es {
			if _, ok := g.Depths[e.SourceID]; !ok {
				continue
			}
			if _, ok := g.Depths[e.TargetID]; !ok {
				continue
			}
			g.Edges = append(g.Edges, e)
		}
	}
	return g, nil
}

// NeighborOptions controls semantic-neighbour linking.
type NeighborOptions struct {
	// MinSimilarity is the cosine similarity an entity's closest chunk
	// pair must reach (0..1). Default 0.65.
	MinSimilarity float64
	// MaxNeighbors is the most related_to edges made per entity. Default 10.
	MaxNeighbors int
	// DryRun computes the neighbours without writing edges.
	DryRun bool
}

func (o *NeighborOptions) defaults() error {
	if o.MinSimilarity == 0 {
		o.MinSimilarity = 0.65
	}
	if o.MaxNeighbors == 0 {
		o.MaxNeighbors = 10
	}
	if err := validateConfidence("min_similarity", o.MinSimilarity); err != nil {
		return err
	}
	if o.MaxNeighbors < 1 || o.MaxNeighbors > 100 {
		return validate.Invalid("max_neighbors", "must be between 1 and 100")
	}
	return nil
}

// NeighborLink is one semantic neighbour of an entity.
type NeighborLink struct {
	EntityID   uuid.UUID `json:"entity_id"`
	Similarity float64   `json:"similarity"`
}

// NeighborResult is what linking one entity's neighbours found and did.
type NeighborResult struct {
	EntityID  uuid.UUID      `json:"entity_id"`
	Neighbors []NeighborLink `json:"neighbors"`
	// Written edges (0 in a dry run) and stale semantic-neighbor edges of
	// this entity removed.
	Written int `json:"written"`
	Removed int `json:"removed"`
	// Skipped says why nothing was linked (no embeddings, archived,
	// session context), or is empty.
	Skipped string `json:"skipped,omitempty"`
}

// maxNeighborChunks bounds the chunks of one entity used as probes.
const maxNeighborChunks = 32

// LinkNeighbors links an entity to the entities whose stored chunk
// embeddings are most cosine-similar to its own (no provider calls), with
// related_to edges of source semantic-neighbor. Pairs already joined by
// another edge (an LLM-extracted or manual one, or the other entity's own
// semantic-neighbor edge) are skipped, so a weaker related_to never
// shadows them. The entity's previous semantic-neighbor edges are replaced,
// so running it again changes nothing.
func (a *Admin) LinkNeighbors(ctx context.Context, id uuid.UUID, opts NeighborOptions) (*NeighborResult, error) {
	return a.c.linkNeighbors(ctx, id, opts)
}

func (c *Client) linkNeighbors(ctx context.Context, id uuid.UUID, opts NeighborOptions) (*NeighborResult, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	modelID, err := c.storedModel(ctx)
	if err != nil {
		return nil, fmt.Errorf("link neighbors: %w", err)
	}
	return c.linkNeighborsOf(ctx, id, modelID, opts, true)
}

// linkNeighbors links an entity's neighbours for the extraction worker
// (not audited: the worker's derived edges never are).
func (c *core) linkNeighbors(ctx context.Context, id uuid.UUID, opts NeighborOptions) (*NeighborResult, error) {
	modelID, err := c.storedModel(ctx)
	if err != nil {
		return nil, fmt.Errorf("link neighbors: %w", err)
	}
	return c.linkNeighborsOf(ctx, id, modelID, opts, false)
}

// linkNeighborsOf is linkNeighbors comparing the vectors of modelID (a
// batch looks the store's model up once). When audited, a change of the
// entity's edges is recorded as edge.link_neighbors in the same
// transaction.
func (c *core) linkNeighborsOf(ctx context.Context, id uuid.UUID, modelID int64, opts NeighborOptions, audited bool) (*NeighborResult, error) {
	res := &NeighborResult{EntityID: id, Neighbors: []NeighborLink{}}
	e, err := c.store.GetEntity(ctx, c.ws, id)
	if err != nil {
		return nil, fmt.Errorf("link neighbors: %w", err)
	}
	switch {
	case e.Status == StatusArchived:
		res.Skipped = "archived"
	case e.MemoryRole() == RoleSessionContext:
		res.Skipped = "session context"
	}
	if res.Skipped != "" {
		return res, nil
	}
	vecs, err := c.graph().ChunkVectors(ctx, c.ws, id, modelID)
	if err != nil {
		return nil, fmt.Errorf("link neighbors: %w", err)
	}
	if len(vecs) == 0 {
		res.Skipped = "no embeddings"
		return res, nil
	}
	if len(vecs) > maxNeighborChunks {
		step := float64(len(vecs)) / maxNeighborChunks
		picked := make([][]float32, 0, maxNeighborChunks)
		for i := 0; i < maxNeighborChunks; i++ {
			picked = append(picked, vecs[int(float64(i)*step)])
		}
		vecs = picked
	}
	best := map[uuid.UUID]float64{}
	limit := max(50, opts.MaxNeighbors*5)
	for _, v := range vecs {
		r, err := c.store.VectorSearch(ctx, c.ws, driver.VectorQuery{ModelID: modelID, Vector: v, Limit: limit, Strategy: StrategyAuto})
		if err != nil {
			return nil, fmt.Errorf("link neighbors: %w", err)
		}
		for _, h := range r.Hits {
			if h.EntityID == id || h.Similarity < opts.MinSimilarity {
				continue
			}
			if s, ok := best[h.EntityID]; !ok || h.Similarity > s {
				best[h.EntityID] = h.Similarity
			}
		}
	}
	existing, err := c.graph().FindEdges(ctx, c.ws, driver.EdgeQuery{IDs: []uuid.UUID{id}})
	if err != nil {
		return nil, fmt.Errorf("link neighbors: %w", err)
	}
	previous := 0
	for _, x := range existing {
		if x.Source == EdgeSourceNeighbor && x.OriginID != nil && *x.OriginID == id {
			previous++
			continue // ours: replaced below
		}
		other := x.TargetID
		if other == id {
			other = x.SourceID
		}
		delete(best, other)
	}
	cands := make([]NeighborLink, 0, len(best))
	for k, s := range best {
		cands = append(cands, NeighborLink{EntityID: k, Similarity: s})
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].Similarity != cands[j].Similarity {
			return cands[i].Similarity > cands[j].Similarity
		}
		return cands[i].EntityID.String() < cands[j].EntityID.String()
	})
	// Drop candidates that may not be linked (archived, session context)
	// among the first MaxNeighbors×3, then cap. The candidates are loaded
	// best first, a few more than still wanted at a time: most pass, so
	// the rest is rarely read.
	cands = cands[:min(len(cands), opts.MaxNeighbors*3)]
	for next := 0; next < len(cands) && len(res.Neighbors) < opts.MaxNeighbors; {
		want := opts.MaxNeighbors - len(res.Neighbors)
		batch := cands[next:min(len(cands), next+want+want/2+1)]
		next += len(batch)
		ids := make([]uuid.UUID, len(batch))
		for i, x := range batch {
			ids[i] = x.EntityID
		}
		ents, err := c.store.GetEntities(ctx, c.ws, ids)
		if err != nil {
			return nil, fmt.Errorf("link neighbors: %w", err)
		}
		ok := make(map[uuid.UUID]bool, len(ents))
		for _, x := range ents {
			ok[x.ID] = x.Status != StatusArchived && x.MemoryRole() != RoleSessionContext
		}
		for _, x := range batch {
			if len(res.Neighbors) == opts.MaxNeighbors {
				break
			}
			if ok[x.EntityID] {
				res.Neighbors = append(res.Neighbors, x)
			}
		}
	}
	if opts.DryRun {
		return res, nil
	}
	now := c.now()
	edges := make([]Edge, len(res.Neighbors))
	for i, n := range res.Neighbors {
		origin := id
		sim := math.Round(n.Similarity*10000) / 10000
		// related_to is symmetric: the edge points from the smaller id to
		// the larger, so two passes (even concurrent ones) over the same
		// pair meet on one edge instead of making two.
		src, dst := id, n.EntityID
		if bytes.Compare(dst[:], src[:]) < 0 {
			src, dst = dst, src
		}
		edges[i] = Edge{ID: newID(), SourceID: src, TargetID: dst, Relation: RelationRelatedTo,
			Confidence: min(max(sim, 0), 1), Source: EdgeSourceNeighbor, Metadata: map[string]any{"similarity": sim},
			OriginID: &origin, CreatedAt: now, UpdatedAt: now}
	}
	var audit *AuditEntry
	if audited && (len(edges) > 0 || previous > 0) {
		linked := make([]string, len(res.Neighbors))
		for i, n := range res.Neighbors {
			linked[i] = n.EntityID.String()
		}
		audit = &AuditEntry{ID: newID(), At: now, Operation: "edge.link_neighbors", EntityID: id.String(),
			Details: map[string]any{"source": EdgeSourceNeighbor, "written": len(edges), "replaced": previous,
				"neighbors": linked, "min_similarity": opts.MinSimilarity}}
	}
	removed, err := c.graph().ReplaceDerivedEdges(ctx, c.ws, id, EdgeSourceNeighbor, edges, audit)
	if err != nil {
		return nil, fmt.Errorf("link neighbors: %w", err)
	}
	res.Written, res.Removed = len(edges), removed
	return res, nil
}

// storedModel is the embedding model whose stored vectors graph passes
// compare: the client's, or the store's active one when the client has no
// embedder (pgm-admin), since comparing stored vectors calls no provider.
func (c *core) storedModel(ctx context.Context) (int64, error) {
	if c.modelID != 0 {
		return c.modelID, nil
	}
	id, _, ok, err := c.store.ActiveModel(ctx)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("the store has no embeddings yet (no active embedding model): %w", ErrUnavailable)
	}
	return id, nil
}

// NeighborScope selects the entities LinkNeighborsBatch processes.
type NeighborScope struct {
	// IDs, when non-empty, are the entities; otherwise every embedded,
	// non-archived entity (of Types, when given), oldest first.
	IDs   []uuid.UUID
	Types []EntityType
	// Limit caps how many entities are processed (0: all).
	Limit int
	// Concurrency is how many entities are processed at once. Default 4.
	Concurrency int
}

// NeighborStats sums a LinkNeighborsBatch run.
type NeighborStats struct {
	Entities int `json:"entities"`
	Linked   int `json:"linked"` // entities that got at least one neighbour
	Edges    int `json:"edges"`  // edges written (or, in a dry run, that would be)
	Skipped  int `json:"skipped"`
}

// LinkNeighborsBatch runs LinkNeighbors over a scope, calling report (from
// one goroutine at a time) with each entity's result.
func (a *Admin) LinkNeighborsBatch(ctx context.Context, scope NeighborScope, opts NeighborOptions, report func(*NeighborResult)) (NeighborStats, error) {
	c := a.c
	var st NeighborStats
	if err := opts.defaults(); err != nil {
		return st, err
	}
	if scope.Limit < 0 {
		return st, validate.Invalid("limit", "must not be negative")
	}
	if scope.Concurrency <= 0 {
		scope.Concurrency = 4
	}
	ids := scope.IDs
	if len(ids) == 0 {
		var err error
		if ids, err = c.embeddedEntities(ctx, scope.Types); err != nil {
			return st, fmt.Errorf("link neighbors: %w", err)
		}
	}
	if scope.Limit > 0 && len(ids) > scope.Limit {
		ids = ids[:scope.Limit]
	}
	modelID, err := c.storedModel(ctx)
	if err != nil {
		return st, fmt.Errorf("link neighbors: %w", err)
	}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	next := make(chan uuid.UUID)
	for w := 0; w < scope.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range next {
				res, err := c.linkNeighborsOf(ctx, id, modelID, opts, true)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
				} else {
					st.Entities++
					switch {
					case res.Skipped != "":
						st.Skipped++
					case len(res.Neighbors) > 0:
						st.Linked++
						st.Edges += len(res.Neighbors)
					}
					if report != nil {
						report(res)
					}
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, id := range ids {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			break
		}
		select {
		case next <- id:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return st, firstErr
}

// embeddedEntities lists the ids of the workspace's embedded, non-archived
// entities (of types, when given), oldest first.
func (c *core) embeddedEntities(ctx context.Context, types []EntityType) ([]uuid.UUID, error) {
	type row struct {
		id uuid.UUID
		at time.Time
	}
	var rows []row
	f := driver.EntityFilter{Types: types}
	for offset := 0; ; offset += MaxListLimit {
		page, _, err := c.store.ListEntities(ctx, c.ws, f, MaxListLimit, offset, 0)
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			if e.EnrichmentStatus == StageCompleted && e.MemoryRole() != RoleSessionContext {
				rows = append(rows, row{e.ID, e.CreatedAt})
			}
		}
		if len(page) < MaxListLimit {
			break
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if !rows[i].at.Equal(rows[j].at) {
			return rows[i].at.Before(rows[j].at)
		}
		return rows[i].id.String() < rows[j].id.String()
	})
	out := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		out[i] = r.id
	}
	return out, nil
}

// PruneOptions selects the edges PruneEdges deletes.
type PruneOptions struct {
	// Below deletes edges whose confidence is below it (0 < Below <= 1).
	Below float64
	// Sources restricts the edge sources; empty means llm-extraction only
	// (user-made edges are kept unless named explicitly).
	Sources []string
	// AnySource includes every source, manual edges too.
	AnySource bool
	// Relation, when set, restricts the relation.
	Relation string
	// DryRun lists the edges without deleting them.
	DryRun bool
}

// PruneEdges deletes low-confidence edges (by default only LLM-extracted
// ones) and returns them.
func (a *Admin) PruneEdges(ctx context.Context, opts PruneOptions) ([]Edge, error) {
	c := a.c
	if math.IsNaN(opts.Below) || opts.Below <= 0 || opts.Below > 1 {
		return nil, validate.Invalid("below", "must be greater than 0 and at most 1")
	}
	q := driver.EdgeQuery{Below: opts.Below, Sources: opts.Sources}
	if !opts.AnySource && len(q.Sources) == 0 {
		q.Sources = []string{EdgeSourceLLM}
	}
	if opts.AnySource {
		q.Sources = nil
	}
	if strings.TrimSpace(opts.Relation) != "" {
		r, err := validate.Relation("relation", opts.Relation)
		if err != nil {
			return nil, err
		}
		q.Relations = []string{r}
	}
	es, err := c.graph().FindEdges(ctx, c.ws, q)
	if err != nil {
		return nil, fmt.Errorf("prune edges: %w", err)
	}
	if es == nil {
		es = []Edge{}
	}
	if opts.DryRun || len(es) == 0 {
		return es, nil
	}
	const batch = 1000
	for start := 0; start < len(es); start += batch {
		part := es[start:min(start+batch, len(es))]
		ids := make([]uuid.UUID, len(part))
		for i, e := range part {
			ids[i] = e.ID
		}
		audit := c.auditEntry("edge.prune", "", map[string]any{"below": opts.Below, "sources": q.Sources, "edges": len(ids)})
		if _, err := c.graph().DeleteEdges(ctx, c.ws, ids, audit); err != nil {
			return nil, fmt.Errorf("prune edges: %w", err)
		}
	}
	return es, nil
}
