package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/wire"
)

func (a *app) storeCmd() *cobra.Command {
	var (
		in       wire.StoreRequest
		tags     []string
		metadata string
	)
	c := a.command(&cobra.Command{
		Use:   "store [content|-]",
		Short: "Store a new entity",
		Long: `Store a new entity. The content is the argument, or standard input when the
argument is "-" or absent and standard input is not a terminal.

The entity is written at once and is findable by keyword search right away;
embedding runs in the background (see 'pgm queue').`,
		Example: `  pgm store "decided to use pgvector" --type memory --tags decisions
  git log -1 --format=%B | pgm store --type interaction --source git
  pgm store - --type document --metadata '{"path":"notes/db.md"}' < notes/db.md`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		content, err := a.contentArg(args)
		if err != nil {
			return err
		}
		in.Content = content
		if cmd.Flags().Changed("tags") {
			in.Tags = cleanTags(tags)
		}
		if cmd.Flags().Changed("metadata") {
			if in.Metadata, err = parseMetadata(metadata); err != nil {
				return err
			}
		}
		cl, err := a.api()
		if err != nil {
			return err
		}
		e, raw, err := cl.Store(a.ctx, in)
		if err != nil {
			return err
		}
		return a.emit(toWriteRow(e), raw, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "Stored %s %s (version %d, %s, enrichment %s)\n",
				cell(e.Type, 0), cell(e.ID.String(), 0), e.Version, cell(e.Visibility, 0), cell(e.EnrichmentStatus, 0))
			return err
		})
	})
	f := c.Flags()
	f.StringVar(&in.Type, "type", string(postgram.TypeMemory), listUsage("entity type", postgram.EntityTypes))
	f.StringSliceVar(&tags, "tags", nil, "comma-separated tags")
	f.StringVar(&in.Visibility, "visibility", "", listUsage("visibility (default shared)", postgram.Visibilities))
	f.StringVar(&in.Owner, "owner", "", "owner")
	f.StringVar(&in.Source, "source", "", "where the content came from (URL, path, tool)")
	f.StringVar(&metadata, "metadata", "", `JSON object of metadata, e.g. '{"k":1}'`)
	f.StringVar(&in.Status, "status", "", listUsage("status (default active; inbox for tasks)", postgram.Statuses))
	registerEnumCompletions(c)
	return c
}
