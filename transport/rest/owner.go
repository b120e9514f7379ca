package rest

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// The owner parameter of GET /api/entities/{id}, /graph and /edges has the
// reference server's meaning: an entity passes when its owner is the one
// asked for, unset, or "shared". An entity that does not pass is not
// found; the graph is not followed through it and an edge to it is left
// out.

// ownerShared is the owner value every owner filter admits.
const ownerShared = driver.OwnerShared

// ownerParam reads and checks the owner parameter ("" when absent).
func ownerParam(p *queryParams) string {
	o := p.str("owner")
	if len(o) > postgram.MaxOwnerLen {
		p.fail(invalid("owner", fmt.Sprintf("is %d bytes; the maximum is %d", len(o), postgram.MaxOwnerLen)))
	}
	return o
}

// ownerMatches reports whether an entity owned by owner passes filter
// (every entity passes an empty filter).
func ownerMatches(owner, filter string) bool {
	return filter == "" || owner == filter || owner == "" || owner == ownerShared
}

// recallOwned recalls id and refuses it as not found when its owner does
// not pass filter.
func recallOwned(ctx context.Context, c *postgram.Client, id uuid.UUID, filter string) (*postgram.Entity, error) {
	e, err := c.Recall(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ownerMatches(e.Owner, filter) {
		return nil, fmt.Errorf("entity %s: %w", id, postgram.ErrNotFound)
	}
	return e, nil
}

// edgesOwned keeps the edges of seed whose other end passes filter.
func edgesOwned(ctx context.Context, c *postgram.Client, seed uuid.UUID, es []postgram.Edge, filter string) ([]postgram.Edge, error) {
	if filter == "" {
		return es, nil
	}
	pass := map[uuid.UUID]bool{seed: true}
	out := make([]postgram.Edge, 0, len(es))
	for _, e := range es {
		other := e.TargetID
		if other == seed {
			other = e.SourceID
		}
		ok, seen := pass[other]
		if !seen {
			_, err := recallOwned(ctx, c, other, filter)
			switch {
			case err == nil:
				ok = true
			case errors.Is(err, postgram.ErrNotFound), errors.Is(err, postgram.ErrForbidden):
				ok = false
			default:
				return nil, err
			}
			pass[other] = ok
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// graphOwned keeps the part of g reachable from its seed within depth
// hops through entities that pass filter, and the edges among them.
func graphOwned(g *postgram.Graph, seed uuid.UUID, depth int, filter string) *postgram.Graph {
	if filter == "" {
		return g
	}
	pass := make(map[uuid.UUID]bool, len(g.Entities))
	for _, e := range g.Entities {
		pass[e.ID] = ownerMatches(e.Owner, filter)
	}
	adj := map[uuid.UUID][]uuid.UUID{}
	for _, e := range g.Edges {
		if pass[e.SourceID] && pass[e.TargetID] {
			adj[e.SourceID] = append(adj[e.SourceID], e.TargetID)
			adj[e.TargetID] = append(adj[e.TargetID], e.SourceID)
		}
	}
	reached := map[uuid.UUID]bool{seed: true}
	frontier := []uuid.UUID{seed}
	for d := 0; d < depth && len(frontier) > 0; d++ {
		var next []uuid.UUID
		for _, id := range frontier {
			for _, n := range adj[id] {
				if !reached[n] {
					reached[n] = true
					next = append(next, n)
				}
			}
		}
		frontier = next
	}
	out := &postgram.Graph{SeedID: g.SeedID, Truncated: g.Truncated, Entities: []*postgram.Entity{}, Edges: []postgram.Edge{}}
	for _, e := range g.Entities {
		if reached[e.ID] {
			out.Entities = append(out.Entities, e)
		}
	}
	for _, e := range g.Edges {
		if reached[e.SourceID] && reached[e.TargetID] {
			out.Edges = append(out.Edges, e)
		}
	}
	return out
}
