package mcp

import (
	"context"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/wire"
)

// Wire shapes of the graph tools.

// edgeRow is a compact edge: what an agent needs to follow or remove it.
type edgeRow struct {
	ID         uuid.UUID `json:"id"`
	SourceID   uuid.UUID `json:"source_id"`
	TargetID   uuid.UUID `json:"target_id"`
	Relation   string    `json:"relation"`
	Confidence float64   `json:"confidence"`
	Source     string    `json:"source"`
}

func edgeRowOf(e postgram.Edge) edgeRow {
	return edgeRow{ID: e.ID, SourceID: e.SourceID, TargetID: e.TargetID, Relation: e.Relation,
		Confidence: round6(e.Confidence), Source: e.Source}
}

type edgeReply[E any] struct {
	Edge E `json:"edge"`
}

// graphNode is a compact entity of an expansion: its content is a preview.
type graphNode struct {
	ID      uuid.UUID           `json:"id"`
	Type    postgram.EntityType `json:"type"`
	Depth   int                 `json:"depth"`
	Content string              `json:"content"`
}

// graphCompact is the compact expand answer.
type graphCompact struct {
	Entities  []graphNode `json:"entities"`
	Edges     []edgeRow   `json:"edges"`
	Truncated bool        `json:"truncated,omitempty"`
}

func graphTools() []toolSpec {
	return []toolSpec{
		{
			Name:  "link",
			Title: "Link two entities",
			Description: "Create a typed, directed edge source_id -[relation]-> target_id in the knowledge graph, e.g. a project " +
				"involves a person, a task is part_of a project, a task is blocked_by another, a decision is mentioned_in a meeting. " +
				"Linking the same source, target and relation again updates that edge (confidence, metadata merged). " +
				"Returns {edge:{id, source_id, target_id, relation, confidence, source}}; keep the id to unlink it.",
			Params: []param{
				{Name: "source_id", Kind: kindString, Required: true, Description: "The id of the entity the edge starts from."},
				{Name: "target_id", Kind: kindString, Required: true, Description: "The id of the entity the edge points to (not the source)."},
				{Name: "relation", Kind: kindString, Required: true,
					Description: "The relation, 1-100 characters: involves, assigned_to, part_of, blocked_by, mentioned_in, related_to or your own."},
				{Name: "confidence", Kind: kindNumber, Min: ptr(0), Max: ptr(1),
					Description: "How sure the link is, 0..1 (default 1.0 for a link you make yourself)."},
				{Name: "metadata", Kind: kindObject, Description: "Arbitrary JSON object kept on the edge, e.g. {\"note\":\"since March\"}."},
			},
			Idempotent: true,
			Handler:    linkTool,
		},
		{
			Name:        "unlink",
			Title:       "Remove an edge",
			Description: "Delete one edge of the knowledge graph by its id (from link, or from expand's edges). Returns {id, deleted: true}.",
			Params: []param{
				{Name: "id", Kind: kindString, Required: true, Description: "The edge's id (a UUID)."},
			},
			Destructive: true,
			Handler:     unlinkTool,
		},
		{
			Name:  "expand",
			Title: "Expand the graph around an entity",
			Description: "Walk the knowledge graph from one entity, following edges in both directions up to depth hops, " +
				"and return the entities reached {id, type, depth, content preview} and every edge among them " +
				"{id, source_id, target_id, relation, confidence, source}. Use it after search when you need causes, " +
				"provenance, decisions, dependencies, blockers, ownership or participants connected to a result; " +
				"a search row's edges summary says whether there is anything to follow. Recall an id for its full content.",
			Params: []param{
				{Name: "id", Kind: kindString, Required: true, Description: "The entity to start from."},
				{Name: "depth", Kind: kindInteger, Min: ptr(1), Max: ptr(3), Description: "Hops to follow, 1..3 (default 1)."},
				{Name: "relation_types", Kind: kindStrings, Description: "Follow only these relations, e.g. [\"involves\",\"part_of\"]."},
				{Name: "min_confidence", Kind: kindNumber, Min: ptr(0), Max: ptr(1), Description: "Follow only edges at least this confident."},
				{Name: "max_nodes", Kind: kindInteger, Min: ptr(1), Max: ptr(1000),
					Description: "Cap on entities returned, the start included (default 100); truncated says when it stopped the walk."},
			},
			TOON:       true,
			ReadOnly:   true,
			Idempotent: true,
			Handler:    expandTool,
		},
	}
}

func idArg(a args, name string) (uuid.UUID, error) {
	s, ok := a.str(name)
	if !ok || s == "" {
		return uuid.Nil, &postgram.FieldError{Field: name, Message: "is required"}
	}
	return postgram.ParseID(name, s)
}

func linkTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	src, err := idArg(a, "source_id")
	if err != nil {
		return reply{}, err
	}
	dst, err := idArg(a, "target_id")
	if err != nil {
		return reply{}, err
	}
	in := postgram.LinkInput{SourceID: src, TargetID: dst}
	in.Relation, _ = a.str("relation")
	if v, ok := a.float("confidence"); ok {
		in.Confidence = &v
	}
	in.Metadata, _ = a.object("metadata")
	e, err := c.Link(ctx, in)
	if err != nil {
		return reply{}, err
	}
	return reply{Compact: edgeReply[edgeRow]{edgeRowOf(*e)}, Full: wire.EdgeResponse{Edge: e}}, nil
}

func unlinkTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	id, err := idArg(a, "id")
	if err != nil {
		return reply{}, err
	}
	if err := c.Unlink(ctx, id); err != nil {
		return reply{}, err
	}
	return reply{Compact: wire.DeleteResponse{ID: id, Deleted: true}}, nil
}

func expandTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	id, err := idArg(a, "id")
	if err != nil {
		return reply{}, err
	}
	var opts postgram.ExpandOptions
	// The library checks the ranges and names the field.
	if v, ok := a.int("depth"); ok {
		opts.Depth = clampInt(v)
	}
	if v, ok := a.int("max_nodes"); ok {
		opts.MaxNodes = clampInt(v)
	}
	opts.RelationTypes, _ = a.strings("relation_types")
	opts.MinConfidence, _ = a.float("min_confidence")
	g, err := c.Expand(ctx, id, opts)
	if err != nil {
		return reply{}, err
	}
	out := graphCompact{Entities: make([]graphNode, 0, len(g.Entities)), Edges: make([]edgeRow, 0, len(g.Edges)), Truncated: g.Truncated}
	for _, e := range g.Entities {
		out.Entities = append(out.Entities, graphNode{ID: e.ID, Type: e.Type, Depth: g.Depths[e.ID], Content: preview(e.Content)})
	}
	for _, e := range g.Edges {
		out.Edges = append(out.Edges, edgeRowOf(e))
	}
	return reply{Compact: out, Full: wire.Graph{Entities: g.Entities, Edges: g.Edges, Truncated: g.Truncated}}, nil
}
