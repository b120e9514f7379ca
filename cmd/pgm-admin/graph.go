package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
)

// linkNeighborsCmd is `pgm-admin link-neighbors`: the semantic-neighbour
// pass over stored embeddings (no provider calls).
func (a *app) linkNeighborsCmd() *cobra.Command {
	var (
		all     bool
		types   []string
		ids     []string
		opts    postgram.NeighborOptions
		limit   int
		workers int
	)
	c := &cobra.Command{
		Use:   "link-neighbors (--all | --type TYPE | --id UUID)",
		Short: "Link entities to their most similar neighbours (related_to, source semantic-neighbor)",
		Long: `Link each selected entity to the entities whose stored chunk embeddings are
most cosine-similar to its own, with related_to edges of source
semantic-neighbor. No LLM or embedding calls are made. Pairs already joined by
another edge (LLM-extracted or manual) are skipped, and each entity's previous
neighbour edges are replaced, so the command is safe to re-run (e.g. weekly
from cron). --dry-run prints the candidates and their similarity without
writing anything; use it to tune --min-similarity for your embedding model.`,
		Example: `  pgm-admin link-neighbors --all
  pgm-admin link-neighbors --type document --min-similarity 0.75 --max-neighbors 5
  pgm-admin link-neighbors --id 123e4567-e89b-12d3-a456-426614174000 --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			scope := postgram.NeighborScope{Limit: limit, Concurrency: workers}
			for _, t := range types {
				scope.Types = append(scope.Types, postgram.EntityType(strings.TrimSpace(t)))
			}
			for _, s := range ids {
				id, err := postgram.ParseID("id", s)
				if err != nil {
					return err
				}
				scope.IDs = append(scope.IDs, id)
			}
			if !all && len(scope.Types) == 0 && len(scope.IDs) == 0 {
				return usageError{"choose what to link: --all, --type TYPE or --id UUID"}
			}
			for _, t := range scope.Types {
				if !t.Valid() {
					return usageError{fmt.Sprintf("unknown --type %q", t)}
				}
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			enc := json.NewEncoder(a.stdout)
			st, err := a.admin.LinkNeighborsBatch(cmd.Context(), scope, opts, func(r *postgram.NeighborResult) {
				if a.json {
					_ = enc.Encode(r)
					return
				}
				if r.Skipped != "" {
					if len(scope.IDs) > 0 {
						fmt.Fprintf(tw, "%s\tskipped: %s\n", r.EntityID, r.Skipped)
					}
					return
				}
				if len(r.Neighbors) == 0 && !opts.DryRun {
					return
				}
				fmt.Fprintf(tw, "%s\t%d neighbours\n", r.EntityID, len(r.Neighbors))
				for _, n := range r.Neighbors {
					fmt.Fprintf(tw, "  -> %s\t%s\n", n.EntityID, strconv.FormatFloat(n.Similarity, 'f', 4, 64))
				}
			})
			if !a.json {
				verb := "linked"
				if opts.DryRun {
					verb = "would link"
				}
				fmt.Fprintf(tw, "%d entities: %s %d with %d edges; %d skipped\n", st.Entities, verb, st.Linked, st.Edges, st.Skipped)
				_ = tw.Flush()
			} else {
				_ = enc.Encode(map[string]any{"summary": st, "dry_run": opts.DryRun})
			}
			return err
		},
	}
	f := c.Flags()
	f.BoolVar(&all, "all", false, "every embedded entity")
	f.StringSliceVar(&types, "type", nil, "only entities of these types")
	f.StringSliceVar(&ids, "id", nil, "only these entities (repeatable)")
	f.Float64Var(&opts.MinSimilarity, "min-similarity", 0.65, "cosine similarity a neighbour must reach (0..1)")
	f.IntVar(&opts.MaxNeighbors, "max-neighbors", 10, "most neighbour edges per entity")
	f.IntVar(&limit, "limit", 0, "process at most this many entities, oldest first (0: all)")
	f.IntVar(&workers, "concurrency", 4, "entities processed at once")
	f.BoolVar(&opts.DryRun, "dry-run", false, "print the neighbours and similarities; write nothing")
	return c
}

// pruneEdgesCmd is `pgm-admin prune-edges`.
func (a *app) pruneEdgesCmd() *cobra.Command {
	var (
		opts   postgram.PruneOptions
		source string
		yes    bool
	)
	c := &cobra.Command{
		Use:   "prune-edges --below CONFIDENCE",
		Short: "Delete low-confidence edges (LLM-extracted ones by default)",
		Long: `Delete edges whose confidence is below --below. Only edges with source
llm-extraction are considered unless --source names another source, or
"any" for every source (manual edges included). --dry-run lists them;
deleting needs --yes.`,
		Example: `  pgm-admin prune-edges --below 0.5 --dry-run
  pgm-admin prune-edges --below 0.5 --yes
  pgm-admin prune-edges --below 0.8 --source semantic-neighbor --relation related_to --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("below") {
				return usageError{"--below is required"}
			}
			switch source = strings.TrimSpace(source); source {
			case "any", "all":
				opts.AnySource = true
			case "":
			default:
				opts.Sources = []string{source}
			}
			if !opts.DryRun && !yes {
				return usageError{"prune-edges deletes edges: preview with --dry-run, then run again with --yes"}
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			es, err := a.admin.PruneEdges(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"dry_run": opts.DryRun, "edges": es, "count": len(es)})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			if opts.DryRun {
				fmt.Fprintln(tw, "EDGE\tSOURCE_ID\tRELATION\tTARGET_ID\tCONFIDENCE\tBY")
				for _, e := range es {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3f\t%s\n", e.ID, e.SourceID, truncate(e.Relation, 40), e.TargetID, e.Confidence, e.Source)
				}
				fmt.Fprintf(tw, "would delete %d edges (dry run)\n", len(es))
			} else {
				fmt.Fprintf(tw, "deleted %d edges\n", len(es))
			}
			return tw.Flush()
		},
	}
	f := c.Flags()
	f.Float64Var(&opts.Below, "below", 0, "delete edges with confidence below this (0..1, required)")
	f.StringVar(&source, "source", "", "edge source to prune (default llm-extraction; \"any\" for all)")
	f.StringVar(&opts.Relation, "relation", "", "only edges with this relation")
	f.BoolVar(&opts.DryRun, "dry-run", false, "list the edges; delete nothing")
	f.BoolVar(&yes, "yes", false, "confirm the deletion")
	return c
}
