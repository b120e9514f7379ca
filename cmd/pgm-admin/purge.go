package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
)

// purgeCmd is `pgm-admin purge`: the hard delete of entities (soft
// delete, archiving, stays the default everywhere else).
func (a *app) purgeCmd() *cobra.Command {
	var (
		ids                  []string
		archivedBefore, typ  string
		dryRun, yes, noScrub bool
	)
	cmd := &cobra.Command{
		Use:   "purge (--id ID... | --archived-before AGE | --type T) [--dry-run] --yes",
		Short: "Hard-delete entities with their chunks, edges, sync state and cached queries (audited by id and count)",
		Long: `purge hard-deletes entities: their content, chunks and embeddings, every
edge with a purged end and the derived edges they originated, their sync
state, and the workspace's persisted query-embedding cache. Each batch of
up to 500 entities is one transaction recorded in the audit log as
admin.purge with its ids and counts, never content; the audit log itself is
kept.

Select with --id (repeatable or comma-separated; any status),
--archived-before (archived entities last changed before a date or an age
such as 90d) and --type; selectors given together must all match. --type
alone selects every entity of the type, whatever its status.

Afterwards the store's files are scrubbed: SQLite rewrites the database
(VACUUM, with secure_delete) and truncates its WAL, so the content cannot
be recovered from the files; PostgreSQL folds its ranking statistics and
vacuums the tables (its WAL, replicas and earlier backups keep what they
held). --no-scrub skips that step. Backups taken before the purge still
hold the content.

--dry-run lists what would be purged; purging needs --yes.`,
		Example: `  pgm-admin purge --archived-before 90d --dry-run
  pgm-admin purge --archived-before 90d --yes
  pgm-admin purge --id 0b7c...,5e1a... --yes
  pgm-admin purge --type interaction --archived-before 30d --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var req postgram.PurgeRequest
			for _, s := range ids {
				for _, p := range strings.Split(s, ",") {
					if p = strings.TrimSpace(p); p == "" {
						continue
					}
					id, err := uuid.Parse(p)
					if err != nil {
						return usageError{fmt.Sprintf("--id %q is not an entity id (a UUID)", p)}
					}
					req.IDs = append(req.IDs, id)
				}
			}
			if archivedBefore != "" {
				cut, err := parseWhen("archived-before", archivedBefore)
				if err != nil {
					return err
				}
				req.ArchivedBefore = cut
			}
			req.Type = postgram.EntityType(strings.TrimSpace(typ))
			if len(req.IDs) == 0 && req.ArchivedBefore.IsZero() && req.Type == "" {
				return usageError{"purge needs --id, --archived-before or --type"}
			}
			if !dryRun && !yes {
				return usageError{"purge deletes entities for good: preview with --dry-run, then run again with --yes"}
			}
			req.DryRun, req.NoScrub = dryRun, noScrub
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			res, err := a.admin.Purge(cmd.Context(), req)
			if err != nil {
				if res != nil && res.Entities > 0 {
					fmt.Fprintf(a.stderr, "purged %d entities before the error\n", res.Entities)
				}
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(res)
			}
			if dryRun {
				for _, id := range res.IDs {
					fmt.Fprintln(a.stdout, id)
				}
				fmt.Fprintf(a.stdout, "would purge %d entities (dry run)\n", len(res.IDs))
				return nil
			}
			fmt.Fprintf(a.stdout, "purged %d entities, %d chunks, %d edges, %d sync states, %d cached query embeddings (recorded as admin.purge)\n",
				res.Entities, res.Chunks, res.Edges, res.SyncFiles, res.QueryEmbeddings)
			// The original bytes of purged ingested entities go too.
			if svc, err := a.env.IngestService(a.admin, slog.New(slog.DiscardHandler)); err != nil {
				return fmt.Errorf("open the raw-content store: %w", err)
			} else if svc != nil {
				n, err := svc.CollectGarbage(cmd.Context())
				if err != nil {
					return fmt.Errorf("delete the purged entities' original bytes: %w", err)
				}
				if n > 0 {
					fmt.Fprintf(a.stdout, "deleted %d original files of ingested entities\n", n)
				}
			}
			if res.Scrubbed {
				fmt.Fprintf(a.stdout, "store files scrubbed at %s\n", time.Now().UTC().Format(time.RFC3339))
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&ids, "id", nil, "an entity id to purge (repeatable, or comma-separated)")
	cmd.Flags().StringVar(&archivedBefore, "archived-before", "", "archived entities last changed before this date (2025-01-01), RFC 3339 time or age (90d)")
	cmd.Flags().StringVar(&typ, "type", "", "entities of this type")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be purged; delete nothing")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm the purge")
	cmd.Flags().BoolVar(&noScrub, "no-scrub", false, "skip scrubbing the store's files afterwards")
	return cmd
}
