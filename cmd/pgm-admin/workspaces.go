package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/workspaces"
)

// workspaceCmd is `pgm-admin workspace`: the store's workspaces, each a
// hard tenant boundary that one server serves by its keys.
func (a *app) workspaceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workspace",
		Short: "Create, list and delete the store's workspaces (one server serves them all, by API key)",
		Long: `A workspace is a tenant: its entities, keys, audit log, sync state, jobs and
events are its own, and one postgram-server serves every workspace of its
store, each request in the workspace of its API key. The other pgm-admin
commands act on one workspace: POSTGRAM_WORKSPACE, or --workspace.`,
	}
	cmd.AddCommand(a.workspaceCreateCmd(), a.workspaceListCmd(), a.workspaceDeleteCmd())
	return cmd
}

// directory opens the store and a workspaces.Directory over it (its
// ingestion services reach the raw-content store, so a delete removes a
// workspace's original bytes too).
func (a *app) directory(cmd *cobra.Command) (*workspaces.Directory, error) {
	if err := a.openStore(cmd.Context()); err != nil {
		return nil, err
	}
	log := slog.New(slog.DiscardHandler)
	ingestFor, err := a.env.IngestServices(log)
	if err != nil {
		return nil, fmt.Errorf("open the raw-content store: %w", err)
	}
	cfg := a.env.ClientConfig(a.store, nil, log)
	cfg.Workspace = a.client.Workspace()
	return workspaces.Open(cmd.Context(), workspaces.Config{Client: cfg, Ingest: ingestFor})
}

func (a *app) workspaceCreateCmd() *cobra.Command {
	var keyName, scopes string
	var noKey bool
	c := &cobra.Command{
		Use:   "create NAME [--key-name NAME] [--scopes all] [--no-key]",
		Short: "Create a workspace and its first API key (printed once)",
		Long: `create enters NAME (letters, digits, '_', '.', '-'; at most 64, starting with a
letter or digit) in the store's workspace directory and creates its first
API key, with every scope unless --scopes says otherwise: the key is printed
once on stdout. A running server serves the new workspace at once (its
worker starts within 30 seconds, or at the key's first request).`,
		Example: `  pgm-admin workspace create acme
  pgm-admin workspace create acme --key-name acme-agent --scopes read,write`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := a.directory(cmd)
			if err != nil {
				return err
			}
			w, err := dir.Create(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			out := map[string]any{"workspace": w.Name()}
			if !noKey {
				if keyName == "" {
					keyName = w.Name() + "-admin"
				}
				token, k, err := w.Admin.CreateKey(cmd.Context(), postgram.KeySpec{Name: keyName, Scopes: splitScopes(scopes)})
				if err != nil {
					return fmt.Errorf("workspace %s was created, its key was not: %w", w.Name(), err)
				}
				out["key"], out["api_key"] = token, k
				if !a.json {
					fmt.Fprintln(a.stdout, token)
					fmt.Fprintf(a.stderr, "Created workspace %s and its key %s (%s) with scopes %s.\nStore the key now: it is shown once and cannot be recovered.\n",
						w.Name(), k.ID, k.Name, joinScopes(k.Scopes))
				}
			} else if !a.json {
				fmt.Fprintf(a.stdout, "created workspace %s (no key: create one with pgm-admin --workspace %s key create NAME)\n", w.Name(), w.Name())
			}
			if err := a.admin.RecordAudit(cmd.Context(), nil, "admin.workspace.create", map[string]any{"workspace": w.Name()}); err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(out)
			}
			return nil
		},
	}
	c.Flags().StringVar(&keyName, "key-name", "", "the first key's name (default NAME-admin)")
	c.Flags().StringVar(&scopes, "scopes", "all", "the first key's scopes: read, write, delete, sync, backup (or all)")
	c.Flags().BoolVar(&noKey, "no-key", false, "create no key")
	return c
}

func (a *app) workspaceListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the workspaces with their statistics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := a.directory(cmd)
			if err != nil {
				return err
			}
			infos, err := dir.List(cmd.Context())
			if err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"workspaces": infos})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKSPACE\tCREATED\tENTITIES\tCHUNKS\tEMBEDDED\tEDGES\tKEYS\tAUDIT")
			for _, in := range infos {
				s := in.Stats
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", in.Name, in.CreatedAt.Format(time.DateOnly),
					s.Entities, s.Chunks, s.EmbeddedChunks, s.Edges, s.Keys, s.AuditEntries)
			}
			if len(infos) > 0 {
				fmt.Fprintf(tw, "\n%d workspaces; database size %s\n", len(infos), humanBytes(infos[0].Stats.DatabaseBytes))
			}
			return tw.Flush()
		},
	}
}

func (a *app) workspaceDeleteCmd() *cobra.Command {
	var dryRun, yes bool
	c := &cobra.Command{
		Use:   "delete NAME [--dry-run] --yes",
		Short: "Delete a workspace with everything in it (entities, keys, audit log, jobs, original files)",
		Long: `delete removes the workspace NAME and everything in it, in one transaction:
entities with their chunks and embeddings, edges, API keys (refused at once
by every server), its audit log, sync state, jobs, events and cached
queries, and then the original bytes of its ingestions. The deletion is
recorded in the audit log of the workspace pgm-admin runs in
(POSTGRAM_WORKSPACE or --workspace) as admin.workspace.delete with the
counts. It cannot be undone: backups taken before still hold the workspace.

--dry-run shows what would be deleted; deleting needs --yes.`,
		Example: `  pgm-admin workspace delete acme --dry-run
  pgm-admin workspace delete acme --yes`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := strings.TrimSpace(args[0])
			if !dryRun && !yes {
				return usageError{"delete removes the workspace and everything in it for good: preview with --dry-run, then run again with --yes"}
			}
			dir, err := a.directory(cmd)
			if err != nil {
				return err
			}
			if dryRun {
				infos, err := dir.List(cmd.Context())
				if err != nil {
					return err
				}
				for _, in := range infos {
					if in.Name == name {
						if a.json {
							return json.NewEncoder(a.stdout).Encode(map[string]any{"workspace": name, "dry_run": true, "stats": in.Stats})
						}
						fmt.Fprintf(a.stdout, "would delete workspace %s: %d entities, %d chunks, %d edges, %d keys, %d audit entries (dry run)\n",
							name, in.Stats.Entities, in.Stats.Chunks, in.Stats.Edges, in.Stats.Keys, in.Stats.AuditEntries)
						return nil
					}
				}
				return fmt.Errorf("workspace %q: %w", name, postgram.ErrNotFound)
			}
			n, err := dir.Delete(cmd.Context(), name)
			if err != nil {
				return err
			}
			details := map[string]any{"workspace": name, "entities": n.Entities, "chunks": n.Chunks, "edges": n.Edges,
				"keys": n.Keys, "audit_rows": n.AuditRows, "jobs": n.Jobs}
			if err := a.admin.RecordAudit(cmd.Context(), nil, "admin.workspace.delete", details); err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"workspace": name, "deleted": n})
			}
			fmt.Fprintf(a.stdout, "deleted workspace %s: %d entities, %d chunks, %d edges, %d keys, %d audit entries, %d jobs\n",
				name, n.Entities, n.Chunks, n.Edges, n.Keys, n.AuditRows, n.Jobs)
			return nil
		},
	}
	c.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be deleted")
	c.Flags().BoolVar(&yes, "yes", false, "delete for good")
	return c
}
