package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
)

// modelCmd is `pgm-admin model list | set-active`.
func (a *app) modelCmd() *cobra.Command {
	c := &cobra.Command{Use: "model", Short: "List embedding models or change the active one"}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the store's embedding models",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			ms, err := a.admin.Models(cmd.Context())
			if err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"models": ms})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tPROVIDER\tMODEL\tDIMENSIONS\tACTIVE\tCREATED")
			for _, m := range ms {
				active := ""
				if m.Active {
					active = "yes"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", m.ID, m.Provider, m.Name, m.Dimensions, active, m.CreatedAt.Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}
	var dry, yes bool
	setActive := &cobra.Command{
		Use:   "set-active ID",
		Short: "Make a registered model active again and queue every entity for re-embedding",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return usageError{fmt.Sprintf("model id %q is not a positive integer (see pgm-admin model list)", args[0])}
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			ms, err := a.admin.Models(cmd.Context())
			if err != nil {
				return err
			}
			for _, m := range ms {
				if m.ID == id {
					return a.switchModel(cmd, m.ModelInfo, dry, yes)
				}
			}
			return usageError{fmt.Sprintf("no embedding model %d (see pgm-admin model list)", id)}
		},
	}
	setActive.Flags().BoolVar(&dry, "dry-run", false, "say what would change; change nothing")
	setActive.Flags().BoolVar(&yes, "yes", false, "confirm the switch")
	c.AddCommand(list, setActive)
	return c
}

// embeddingsCmd is `pgm-admin embeddings migrate`.
func (a *app) embeddingsCmd() *cobra.Command {
	c := &cobra.Command{Use: "embeddings", Short: "Move the store to another embedding model"}
	var (
		m          postgram.ModelInfo
		targetDims int
		dry, yes   bool
	)
	migrate := &cobra.Command{
		Use:   "migrate [--provider NAME --model NAME] (--dimensions N | --target-dimensions N)",
		Short: "Make another embedding model active and queue every entity for re-embedding",
		Long: `Register the model (when new), make it the store's only active model, and
queue every entity of every workspace for embedding with it. Keyword search
keeps working throughout; vector search finds an entity again once the
worker has re-embedded it. Then restart postgram-server with the matching
EMBEDDING_PROVIDER, EMBEDDING_MODEL and EMBEDDING_DIMENSIONS: a server
configured for another model refuses to start.

--target-dimensions is --dimensions under the reference system's name.
Without --provider and --model the model is the one EMBEDDING_PROVIDER and
EMBEDDING_MODEL configure (as the server would name it with the new
dimensions), else the active model's, at the new dimensions.`,
		Example: `  pgm-admin embeddings migrate --target-dimensions 1024 --dry-run
  pgm-admin embeddings migrate --target-dimensions 1024 --yes
  pgm-admin embeddings migrate --provider openai --model text-embedding-3-large --dimensions 3072 --dry-run
  pgm-admin embeddings migrate --provider ollama --model bge-m3 --dimensions 1024 --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m.Provider, m.Name = strings.TrimSpace(m.Provider), strings.TrimSpace(m.Name)
			if targetDims != 0 {
				if m.Dimensions != 0 && m.Dimensions != targetDims {
					return usageError{"--dimensions and --target-dimensions disagree: give one"}
				}
				m.Dimensions = targetDims
			}
			if m.Dimensions == 0 {
				return usageError{"--dimensions (or --target-dimensions) is required"}
			}
			if (m.Provider == "") != (m.Name == "") {
				return usageError{"give both --provider and --model, or neither (to take them from EMBEDDING_PROVIDER and EMBEDDING_MODEL, or the active model)"}
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			if m.Provider == "" {
				var err error
				if m, err = a.targetModel(cmd.Context(), m.Dimensions); err != nil {
					return err
				}
			}
			return a.switchModel(cmd, m, dry, yes)
		},
	}
	f := migrate.Flags()
	f.StringVar(&m.Provider, "provider", "", "embedding provider as the server names it (openai, ollama, ...); default: EMBEDDING_PROVIDER's, else the active model's")
	f.StringVar(&m.Name, "model", "", "model name; default: EMBEDDING_MODEL's, else the active model's")
	f.IntVar(&m.Dimensions, "dimensions", 0, "vector dimensions")
	f.IntVar(&targetDims, "target-dimensions", 0, "the same as --dimensions (the reference system's name)")
	f.BoolVar(&dry, "dry-run", false, "say what would change; change nothing")
	f.BoolVar(&yes, "yes", false, "confirm the switch")
	c.AddCommand(migrate)
	return c
}

// targetModel is the model a migration to dims dimensions moves to when
// no provider and model are named: the embedder the environment
// configures (EMBEDDING_PROVIDER, EMBEDDING_MODEL) with those dimensions,
// as the restarted server will identify it, else the active model's
// provider and name with those dimensions.
func (a *app) targetModel(ctx context.Context, dims int) (postgram.ModelInfo, error) {
	if a.env.EmbeddingProvider != "none" {
		env := *a.env
		env.EmbeddingDimensions = dims
		emb, err := env.Embedder()
		if err != nil {
			return postgram.ModelInfo{}, usageError{fmt.Sprintf("EMBEDDING_PROVIDER %s with %d dimensions: %v", env.EmbeddingProvider, dims, err)}
		}
		if emb != nil {
			m := emb.Model()
			if m.Dimensions != dims {
				return postgram.ModelInfo{}, usageError{fmt.Sprintf("EMBEDDING_PROVIDER %s model %s has %d dimensions, not %d", env.EmbeddingProvider, m.Name, m.Dimensions, dims)}
			}
			return m, nil
		}
	}
	ms, err := a.admin.Models(ctx)
	if err != nil {
		return postgram.ModelInfo{}, err
	}
	for _, r := range ms {
		if r.Active {
			return postgram.ModelInfo{Provider: r.Provider, Name: r.Name, Dimensions: dims}, nil
		}
	}
	return postgram.ModelInfo{}, usageError{"no active embedding model and no EMBEDDING_PROVIDER: name the model with --provider and --model"}
}

func (a *app) switchModel(cmd *cobra.Command, m postgram.ModelInfo, dry, yes bool) error {
	if !dry && !yes {
		return usageError{"switching the embedding model re-embeds every entity: preview with --dry-run, then run again with --yes"}
	}
	res, err := a.admin.SwitchModel(cmd.Context(), m, dry)
	if err != nil {
		return err
	}
	if a.json {
		return json.NewEncoder(a.stdout).Encode(res)
	}
	from := "none"
	if p := res.Previous; p != nil {
		from = fmt.Sprintf("%s/%s (%d dimensions)", p.Provider, p.Name, p.Dimensions)
	}
	to := fmt.Sprintf("%s/%s (%d dimensions)", m.Provider, m.Name, m.Dimensions)
	if dry {
		_, err := fmt.Fprintf(a.stdout, "would switch the active embedding model from %s to %s and queue every entity for re-embedding (dry run)\n", from, to)
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "active embedding model: %s (was %s); %d entities queued for re-embedding\n"+
		"restart postgram-server with EMBEDDING_PROVIDER=%s EMBEDDING_MODEL=%s EMBEDDING_DIMENSIONS=%d\n",
		to, from, res.Queued, m.Provider, m.Name, m.Dimensions)
	return err
}

// reembedCmd is `pgm-admin reembed`.
func (a *app) reembedCmd() *cobra.Command {
	var (
		all, dry bool
		types    []string
		model    string
	)
	c := &cobra.Command{
		Use:   "reembed (--all | --type TYPE) [--model ID]",
		Short: "Queue entities for embedding again with the active model (or switch it with --model)",
		Long: `Mark entities pending for embedding with fresh attempts, so the worker
retries failed and exhausted ones at once. Chunks that already have a vector
for the active model keep it (no provider call); to recompute every vector
with another model use pgm-admin embeddings migrate.

--model ID (a registered model's id or name, see pgm-admin model list)
first makes that model the active one, as model set-active does: every
entity of every workspace is then queued for it, whatever --type says.
Restart postgram-server with the matching EMBEDDING_* settings.`,
		Example: `  pgm-admin reembed --all
  pgm-admin reembed --type document
  pgm-admin reembed --all --model 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var ts []postgram.EntityType
			for _, t := range types {
				et := postgram.EntityType(strings.TrimSpace(t))
				if !et.Valid() {
					return usageError{fmt.Sprintf("unknown --type %q", t)}
				}
				ts = append(ts, et)
			}
			if !all && len(ts) == 0 {
				return usageError{"choose what to queue: --all or --type TYPE"}
			}
			if dry && model == "" {
				return usageError{"--dry-run goes with --model (queueing for re-embedding changes no content)"}
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			if model != "" {
				m, err := a.findModel(cmd.Context(), model)
				if err != nil {
					return err
				}
				return a.switchModel(cmd, m, dry, true)
			}
			n, err := a.admin.Reembed(cmd.Context(), ts)
			if err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"queued": n})
			}
			_, err = fmt.Fprintf(a.stdout, "queued %d entities for embedding\n", n)
			return err
		},
	}
	c.Flags().BoolVar(&all, "all", false, "every entity of the workspace")
	c.Flags().StringSliceVar(&types, "type", nil, "only entities of these types")
	c.Flags().StringVar(&model, "model", "", "first make this registered model (id or name) the active one")
	c.Flags().BoolVar(&dry, "dry-run", false, "with --model: say what would change; change nothing")
	return c
}

// findModel finds a registered model by id, or by name when exactly one
// model has it.
func (a *app) findModel(ctx context.Context, ref string) (postgram.ModelInfo, error) {
	ms, err := a.admin.Models(ctx)
	if err != nil {
		return postgram.ModelInfo{}, err
	}
	id, idErr := strconv.ParseInt(ref, 10, 64)
	var found []postgram.ModelInfo
	for _, m := range ms {
		if (idErr == nil && m.ID == id) || m.Name == ref {
			found = append(found, m.ModelInfo)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return postgram.ModelInfo{}, usageError{fmt.Sprintf("--model %q: no registered embedding model has this id or name (see pgm-admin model list; register a new one with pgm-admin embeddings migrate)", ref)}
	}
	return postgram.ModelInfo{}, usageError{fmt.Sprintf("--model %q: %d models have this name; give the id (see pgm-admin model list)", ref, len(found))}
}
