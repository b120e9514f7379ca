package main

import (
	"github.com/postgram-go/postgram/llm"

	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
)

// judge returns the LLM edge judge: the configured extraction model, or
// nil (the library then says what to configure). Tests replace it.
var judge = func(a *app) llm.EdgeJudge { return a.env.Extraction.Judge() }

// reextractFlags are the scope flags reextract and improve-graph share.
type reextractFlags struct {
	req   postgram.ReextractRequest
	typ   string
	ids   []string
	clean bool
	yes   bool
}

func (r *reextractFlags) bind(c *cobra.Command) {
	f := c.Flags()
	f.BoolVar(&r.req.All, "all", false, "every extractable entity")
	f.StringVar(&r.typ, "type", "", "only entities of this type")
	f.StringSliceVar(&r.ids, "id", nil, "only these entities (repeatable)")
	f.BoolVar(&r.req.NoEdgesOnly, "no-edges-only", false, "only entities that produced no llm-extraction edge")
	f.BoolVar(&r.clean, "clean-edges", false, "delete the entities' llm-extraction edges now (needs --yes)")
	f.IntVar(&r.req.Limit, "limit", 0, "queue at most this many entities, oldest first (0: all)")
	f.BoolVar(&r.req.DryRun, "dry-run", false, "list what would be queued; change nothing")
	f.BoolVar(&r.yes, "yes", false, "confirm --clean-edges")
}

func (r *reextractFlags) build() error {
	if r.typ != "" {
		r.req.Type = postgram.EntityType(strings.TrimSpace(r.typ))
		if !r.req.Type.Valid() {
			return usageError{fmt.Sprintf("unknown --type %q", r.typ)}
		}
	}
	for _, s := range r.ids {
		id, err := postgram.ParseID("id", s)
		if err != nil {
			return err
		}
		r.req.IDs = append(r.req.IDs, id)
	}
	if !r.req.All && r.req.Type == "" && len(r.req.IDs) == 0 {
		return usageError{"choose what to queue: --all, --type TYPE or --id UUID"}
	}
	r.req.CleanEdges = r.clean
	if r.clean && !r.req.DryRun && !r.yes {
		return usageError{"--clean-edges deletes edges: preview with --dry-run, then run again with --yes"}
	}
	return nil
}

func (a *app) runReextract(cmd *cobra.Command, r *reextractFlags) error {
	if err := r.build(); err != nil {
		return err
	}
	if err := a.openStore(cmd.Context()); err != nil {
		return err
	}
	res, err := a.admin.Reextract(cmd.Context(), r.req)
	if err != nil {
		return err
	}
	if a.json {
		return json.NewEncoder(a.stdout).Encode(res)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	if r.req.DryRun {
		for _, id := range res.IDs {
			fmt.Fprintln(tw, id)
		}
		fmt.Fprintf(tw, "would queue %d entities for extraction (dry run)\n", res.Selected)
	} else {
		by := "the configured model"
		if o := r.req.Override; o != (postgram.ExtractOverride{}) {
			by = strings.Trim(o.Provider+" "+o.Model, " ")
		}
		fmt.Fprintf(tw, "queued %d entities for extraction with %s; deleted %d llm-extraction edges\n", res.Queued, by, res.EdgesDeleted)
		if !a.env.Extraction.Enabled {
			fmt.Fprintln(tw, "note: EXTRACTION_ENABLED is not set here; the server's worker extracts them if it has extraction enabled")
		}
	}
	return tw.Flush()
}

// reextractCmd is `pgm-admin reextract`.
func (a *app) reextractCmd() *cobra.Command {
	r := &reextractFlags{}
	var onlyFailed bool
	c := &cobra.Command{
		Use:   "reextract (--all | --type TYPE | --id UUID)",
		Short: "Queue entities for LLM relation extraction again",
		Long: `Mark the selected entities' extraction pending (attempts and errors cleared)
so the server's worker extracts them again, e.g. after switching to a better
model. The new extraction replaces the edges the old one produced for each
entity; --clean-edges deletes them at once instead. Session context and
auto-created placeholders are never queued, and edges made by people (source
manual) are never touched.`,
		Example: `  pgm-admin reextract --all --only-failed
  pgm-admin reextract --type document --no-edges-only --limit 100
  pgm-admin reextract --all --clean-edges --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r.req.OnlyFailed = onlyFailed
			return a.runReextract(cmd, r)
		},
	}
	r.bind(c)
	c.Flags().BoolVar(&onlyFailed, "only-failed", false, "only entities whose extraction failed")
	return c
}

// improveGraphCmd is `pgm-admin improve-graph`.
func (a *app) improveGraphCmd() *cobra.Command {
	r := &reextractFlags{}
	c := &cobra.Command{
		Use:   "improve-graph (--all | --type TYPE | --id UUID) [--provider NAME] [--model NAME]",
		Short: "Re-extract entities with another provider or model, stored per entity",
		Long: `Queue the selected entities for extraction with a provider and model stored
on each row; the worker uses them instead of the configured default and
clears them on success. Existing edges stay until the new extraction
replaces them (an edge found again gets the new confidence and provenance);
--clean-edges deletes them first. The provider's key comes from its own
variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, OLLAMA_BASE_URL) unless it is
the configured EXTRACTION_PROVIDER.`,
		Example: `  pgm-admin improve-graph --type document --no-edges-only --provider ollama --model qwen3:8b
  pgm-admin improve-graph --id 123e4567-e89b-12d3-a456-426614174000 --provider anthropic --model claude-sonnet-4-5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if r.req.Override == (postgram.ExtractOverride{}) {
				return usageError{"name --provider and/or --model (reextract uses the configured model)"}
			}
			return a.runReextract(cmd, r)
		},
	}
	r.bind(c)
	c.Flags().StringVar(&r.req.Override.Provider, "provider", "", "openai, anthropic, ollama or openai-compatible")
	c.Flags().StringVar(&r.req.Override.Model, "model", "", "the model name")
	return c
}

// validateEdgesCmd is `pgm-admin validate-edges`.
func (a *app) validateEdgesCmd() *cobra.Command {
	var (
		req    postgram.ValidateEdgesRequest
		source string
		days   int
		yes    bool
	)
	c := &cobra.Command{
		Use:   "validate-edges",
		Short: "Ask the extraction LLM whether derived edges are supported by their content; remove the rest",
		Long: `An LLM-as-judge pass: for each llm-extraction edge (--source to choose
another derived source) the configured extraction model reads the content
the edge came from and says whether it supports the relation. Edges judged
unsupported, or supported with less than --min-confidence, are removed; kept
edges record last_validated_at, and edges validated within
--skip-validated-days are skipped unless --force. Manual edges are never
judged. About one LLM call per edge. Removing needs --yes; --dry-run judges
and reports without changing anything.`,
		Example: `  pgm-admin validate-edges --dry-run --limit 20
  pgm-admin validate-edges --min-confidence 0.5 --limit 500 --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if s := strings.TrimSpace(source); s != "" {
				req.Sources = []string{s}
			}
			if days < 0 {
				return usageError{"--skip-validated-days must not be negative"}
			}
			req.SkipValidatedWithin = time.Duration(days) * 24 * time.Hour
			if days == 0 {
				req.Force = true
			}
			if !req.DryRun && !yes {
				return usageError{"validate-edges removes edges: preview with --dry-run, then run again with --yes"}
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			req.Judge = judge(a)
			res, err := a.admin.ValidateEdges(cmd.Context(), req)
			if err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(res)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			if len(res.Items) > 0 {
				fmt.Fprintln(tw, "EDGE\tRELATION\tACTION\tCONFIDENCE\tREASON")
				for _, it := range res.Items {
					why := it.Verdict.Reason
					if it.Error != "" {
						why = it.Error
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\n", it.Edge.ID, truncate(it.Edge.Relation, 40), it.Action, it.Verdict.Confidence, oneLine(why, 80))
				}
			}
			verb := "removed"
			if res.DryRun {
				verb = "would remove"
			}
			fmt.Fprintf(tw, "judged %d edges: kept %d, %s %d, %d failed, %d skipped (validated recently)\n",
				res.Judged, res.Kept, verb, res.Removed, res.Failed, res.Skipped)
			return tw.Flush()
		},
	}
	f := c.Flags()
	f.StringVar(&source, "source", "", "edge source to judge (default llm-extraction)")
	f.Float64Var(&req.MinConfidence, "min-confidence", 0.4, "remove edges judged less confident than this (0..1)")
	f.IntVar(&days, "skip-validated-days", 7, "skip edges validated within this many days (0: judge all)")
	f.BoolVar(&req.Force, "force", false, "judge edges validated recently too")
	f.IntVar(&req.Limit, "limit", 100, "judge at most this many edges")
	f.BoolVar(&req.DryRun, "dry-run", false, "judge and report; change nothing")
	f.BoolVar(&yes, "yes", false, "confirm removing edges")
	return c
}
