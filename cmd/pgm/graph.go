package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/google/uuid"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/cmd/pgm/internal/api"
	"github.com/postgram-go/postgram/wire"
)

// edgeRow is the compact form of an edge.
type edgeRow struct {
	ID         string  `json:"id"`
	SourceID   string  `json:"source_id"`
	TargetID   string  `json:"target_id"`
	Relation   string  `json:"relation"`
	Confidence float64 `json:"confidence"`
	Source     string  `json:"source"`
}

func toEdgeRow(e postgram.Edge) edgeRow {
	return edgeRow{ID: e.ID.String(), SourceID: e.SourceID.String(), TargetID: e.TargetID.String(), Relation: e.Relation, Confidence: e.Confidence, Source: e.Source}
}

// graphNodeRow is the compact form of an entity reached by expand.
type graphNodeRow struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Preview string `json:"preview"`
}

type graphRows struct {
	Entities  []graphNodeRow `json:"entities"`
	Edges     []edgeRow      `json:"edges"`
	Truncated bool           `json:"truncated,omitempty"`
}

func (a *app) linkCmd() *cobra.Command {
	var relation string
	var confidence float64
	var metadata string
	c := a.command(&cobra.Command{
		Use:   "link SOURCE_ID TARGET_ID --relation RELATION",
		Short: "Link two entities with a typed, directed edge",
		Long: `Create the edge SOURCE -[relation]-> TARGET in the knowledge graph. Linking
the same source, target and relation again updates that edge. Common
relations: involves, assigned_to, part_of, blocked_by, mentioned_in,
related_to; any name of 1 to 100 characters is accepted.`,
		Example:           `  pgm link 123e4567-e89b-12d3-a456-426614174000 9b2f0c4e-8d1a-4b7e-9f3c-2a5d6e7f8a9b --relation involves`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		src, err := entityID(args[0])
		if err != nil {
			return err
		}
		dst, err := entityID(args[1])
		if err != nil {
			return err
		}
		if relation == "" {
			return usageErr("--relation is required")
		}
		in := wire.LinkRequest{SourceID: src, TargetID: dst, Relation: relation}
		if cmd.Flags().Changed("confidence") {
			in.Confidence = &confidence
		}
		if metadata != "" {
			m, err := parseMetadata(metadata)
			if err != nil {
				return err
			}
			in.Metadata = m
		}
		cl, err := a.api()
		if err != nil {
			return err
		}
		e, raw, err := cl.Link(a.ctx, in)
		if err != nil {
			return err
		}
		return a.emit(toEdgeRow(*e), raw, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "Linked %s -[%s]-> %s (edge %s, confidence %s)\n",
				e.SourceID, cell(e.Relation, 0), e.TargetID, e.ID, strconv.FormatFloat(e.Confidence, 'f', -1, 64))
			return err
		})
	})
	f := c.Flags()
	f.StringVarP(&relation, "relation", "r", "", "the relation (required), e.g. involves, part_of, blocked_by")
	f.Float64Var(&confidence, "confidence", 1, "how sure the link is, 0 to 1")
	f.StringVar(&metadata, "metadata", "", "a JSON object kept on the edge")
	return c
}

func (a *app) unlinkCmd() *cobra.Command {
	return a.command(&cobra.Command{
		Use:               "unlink EDGE_ID",
		Short:             "Delete an edge of the knowledge graph",
		Long:              `Delete one edge by its id (printed by link, listed by expand).`,
		Example:           `  pgm unlink 0190f3a2-7c1e-7d4b-9a8e-1f2c3d4e5f60`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		id, err := edgeID(args[0])
		if err != nil {
			return err
		}
		cl, err := a.api()
		if err != nil {
			return err
		}
		out, raw, err := cl.Unlink(a.ctx, id)
		if err != nil {
			return err
		}
		if out.ID == uuid.Nil {
			out.ID, _ = uuid.Parse(id)
		}
		return a.emit(out, raw, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "Deleted edge %s\n", cell(out.ID.String(), 0))
			return err
		})
	})
}

func (a *app) expandCmd() *cobra.Command {
	var q api.GraphQuery
	c := a.command(&cobra.Command{
		Use:   "expand ID",
		Short: "Show an entity's neighbourhood in the knowledge graph",
		Long: `Walk the knowledge graph from an entity, following edges in both directions
up to --depth hops (1 to 3), and print the entities reached and the edges
among them.`,
		Example: `  pgm expand 123e4567-e89b-12d3-a456-426614174000 --depth 2
  pgm expand 123e4567-e89b-12d3-a456-426614174000 --relation involves --json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		id, err := entityID(args[0])
		if err != nil {
			return err
		}
		if q.Depth < 1 || q.Depth > 3 {
			return usageErr("--depth must be 1, 2 or 3")
		}
		cl, err := a.api()
		if err != nil {
			return err
		}
		g, raw, err := cl.Expand(a.ctx, id, q)
		if err != nil {
			return err
		}
		rows := graphRows{Entities: []graphNodeRow{}, Edges: []edgeRow{}, Truncated: g.Truncated}
		for _, e := range g.Entities {
			rows.Entities = append(rows.Entities, graphNodeRow{ID: e.ID.String(), Type: string(e.Type), Preview: truncate(oneLine(e.Content), previewWidth)})
		}
		for _, e := range g.Edges {
			rows.Edges = append(rows.Edges, toEdgeRow(e))
		}
		return a.emit(rows, raw, func(w io.Writer) error {
			if err := table(w, func(tw io.Writer) {
				fmt.Fprintln(tw, "ID\tTYPE\tPREVIEW")
				for _, r := range rows.Entities {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, cell(r.Type, 0), cell(r.Preview, contentWidth))
				}
			}); err != nil {
				return err
			}
			fmt.Fprintln(w)
			if len(rows.Edges) == 0 {
				_, err := fmt.Fprintln(w, "No edges.")
				return err
			}
			if err := table(w, func(tw io.Writer) {
				fmt.Fprintln(tw, "EDGE\tSOURCE\tRELATION\tTARGET\tCONFIDENCE\tBY")
				for _, r := range rows.Edges {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.SourceID, cell(r.Relation, 40), r.TargetID,
						strconv.FormatFloat(r.Confidence, 'f', -1, 64), cell(r.Source, 0))
				}
			}); err != nil {
				return err
			}
			if rows.Truncated {
				_, err := fmt.Fprintln(w, "(stopped at --max-nodes; more entities are reachable)")
				return err
			}
			return nil
		})
	})
	f := c.Flags()
	f.IntVarP(&q.Depth, "depth", "d", 1, "hops to follow, 1 to 3")
	f.StringSliceVar(&q.RelationTypes, "relation", nil, "follow only these relations (repeatable or comma-separated)")
	f.Float64Var(&q.MinConfidence, "min-confidence", 0, "follow only edges at least this confident (0 to 1)")
	f.IntVar(&q.MaxNodes, "max-nodes", 0, "cap on entities returned (server default 100)")
	return c
}

// edgeID checks an edge id argument.
func edgeID(s string) (string, error) {
	id, err := entityID(s)
	if err != nil {
		return "", usageErr("invalid edge ID %q: want a UUID like 123e4567-e89b-12d3-a456-426614174000", truncate(s, 64))
	}
	return id, nil
}
