package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/wire"
)

func (a *app) updateCmd() *cobra.Command {
	var (
		in                                            wire.UpdateRequest
		version                                       int64
		content, visibility, status, owner, source, m string
		tags                                          []string
	)
	c := a.command(&cobra.Command{
		Use:   "update ID [-] --version N",
		Short: "Change an entity (optimistic concurrency)",
		Long: `Change an entity. --version must be the version you read (pgm recall ID):
if someone changed the entity since, the update is refused with exit code 7
and the current version is printed, so you can re-read and retry.

Only the fields given change. --content - (or a trailing "-") reads the new
content from standard input; --tags "" clears the tags; --metadata is merged
key by key into the existing metadata (a key set to null is removed).`,
		Example: `  pgm update 123e4567-e89b-12d3-a456-426614174000 --version 1 --content "updated text"
  pgm update 123e4567-e89b-12d3-a456-426614174000 --version 2 --tags decisions,db --status done
  cat notes.md | pgm update 123e4567-e89b-12d3-a456-426614174000 - --version 3`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		id, err := entityID(args[0])
		if err != nil {
			return err
		}
		in.Version = &version
		fl := cmd.Flags()
		if len(args) == 2 {
			if args[1] != "-" || fl.Changed("content") {
				return usageErr("unexpected argument %q: pass new content with --content TEXT or --content - (standard input)", args[1])
			}
			content = "-"
		}
		if len(args) == 2 || fl.Changed("content") {
			s, err := a.contentArg([]string{content})
			if err != nil {
				return err
			}
			in.Content = &s
		}
		set := func(name string, v string, dst **string) {
			if fl.Changed(name) {
				*dst = &v
			}
		}
		set("visibility", visibility, &in.Visibility)
		set("status", status, &in.Status)
		set("owner", owner, &in.Owner)
		set("source", source, &in.Source)
		if fl.Changed("tags") {
			t := cleanTags(tags)
			in.Tags = &t
		}
		if fl.Changed("metadata") {
			if in.Metadata, err = parseMetadata(m); err != nil {
				return err
			}
		}
		if in.Content == nil && in.Visibility == nil && in.Status == nil && in.Owner == nil && in.Source == nil &&
			in.Tags == nil && in.Metadata == nil {
			return usageErr("nothing to update: pass at least one of --content, --tags, --visibility, --status, --owner, --source, --metadata")
		}
		cl, err := a.api()
		if err != nil {
			return err
		}
		e, raw, err := cl.Update(a.ctx, id, in)
		if err != nil {
			return err
		}
		return a.emit(toWriteRow(e), raw, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "Updated %s %s (now version %d, %s, enrichment %s)\n",
				cell(e.Type, 0), cell(e.ID.String(), 0), e.Version, cell(e.Status, 0), cell(e.EnrichmentStatus, 0))
			return err
		})
	})
	f := c.Flags()
	f.Int64Var(&version, "version", 0, "the version you read (required)")
	f.StringVar(&content, "content", "", `new content ("-" reads standard input)`)
	f.StringSliceVar(&tags, "tags", nil, `new comma-separated tags, replacing the old ones ("" clears them)`)
	f.StringVar(&visibility, "visibility", "", listUsage("new visibility", postgram.Visibilities))
	f.StringVar(&status, "status", "", listUsage("new status", postgram.Statuses))
	f.StringVar(&owner, "owner", "", "new owner")
	f.StringVar(&source, "source", "", "new source")
	f.StringVar(&m, "metadata", "", `JSON object merged into the metadata, e.g. '{"k":1,"old":null}'`)
	_ = c.MarkFlagRequired("version")
	registerEnumCompletions(c)
	return c
}
