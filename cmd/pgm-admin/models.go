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
		m        postgram.ModelInfo
		dry, yes bool
	)
	migrate := &cobra.Command{
		Use:   "migrate --provider NAME --model NAME --dimensions N",
		Short: "Make another embedding model active and queue every entity for re-embedding",
		Long: `Register the model (when new), make it the store's only active model, and
queue every entity of every workspace for embedding with it. Keyword search
keeps working throughout; vector search finds an entity again once the
worker has re-embedded it. Then restart postgram-server with the matching
EMBEDDING_PROVIDER, EMBEDDING_MODEL and EMBEDDING_DIMENSIONS: a server
configured for another model refuses to start.`,
		Example: `  pgm-admin embeddings migrate --provider openai --model text-embedding-3-large --dimensions 3072 --dry-run
  pgm-admin embeddings migrate --provider ollama --model bge-m3 --dimensions 1024 --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m.Provider, m.Name = strings.TrimSpace(m.Provider), strings.TrimSpace(m.Name)
			if m.Provider == "" || m.Name == "" || m.Dimensions == 0 {
				return usageError{"--provider, --model and --dimensions are required"}
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			return a.switchModel(cmd, m, dry, yes)
		},
	}
	f := migrate.Flags()
	f.StringVar(&m.Provider, "provider", "", "embedding provider as the server names it (openai, ollama, ...)")
	f.StringVar(&m.Name, "model", "", "model name")
	f.IntVar(&m.Dimensions, "dimensions", 0, "vector dimensions")
	f.BoolVar(&dry, "dry-run", false, "say what would change; change nothing")
	f.BoolVar(&yes, "yes", false, "confirm the switch")
	c.AddCommand(migrate)
	return c
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
		all   bool
		types []string
	)
	c := &cobra.Command{
		Use:   "reembed (--all | --type TYPE)",
		Short: "Queue entities for embedding again with the active model",
		Long: `Mark entities pending for embedding with fresh attempts, so the worker
retries failed and exhausted ones at once. Chunks that already have a vector
for the active model keep it (no provider call); to recompute every vector
with another model use pgm-admin embeddings migrate.`,
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
			if err := a.openStore(cmd.Context()); err != nil {
				return err
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
	return c
}
