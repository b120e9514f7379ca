package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/postgram-go/postgram"
	"github.com/spf13/cobra"
)

func (a *app) recallCmd() *cobra.Command {
	return a.command(&cobra.Command{
		Use:   "recall ID",
		Short: "Show one entity with its complete content",
		Long: `Show one entity with its complete content and metadata. Search and list
rows carry only the matched chunk or a preview; recall returns everything.`,
		Example:           `  pgm recall 123e4567-e89b-12d3-a456-426614174000 --json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		id, err := entityID(args[0])
		if err != nil {
			return err
		}
		cl, err := a.api()
		if err != nil {
			return err
		}
		e, raw, err := cl.Get(a.ctx, id)
		if err != nil {
			return err
		}
		return a.emit(toEntityRow(e), raw, func(w io.Writer) error {
			if err := table(w, func(w io.Writer) { a.recallHeader(w, e) }); err != nil {
				return err
			}
			_, err := fmt.Fprintf(w, "\n%s\n", safeText(e.Content))
			return err
		})
	})
}

// recallHeader writes an entity's fields as a two-column table.
func (a *app) recallHeader(w io.Writer, e *postgram.Entity) {
	now := a.now()
	row(w, "ID", cell(e.ID.String(), 0))
	row(w, "Type", cell(e.Type, 0))
	row(w, "Status", cell(e.Status, 0))
	row(w, "Visibility", cell(e.Visibility, 0))
	row(w, "Owner", cell(e.Owner, 0))
	row(w, "Tags", cell(strings.Join(e.Tags, ", "), 0))
	row(w, "Source", cell(e.Source, 0))
	row(w, "Version", fmt.Sprint(e.Version))
	enr := cell(e.EnrichmentStatus, 0)
	if e.EnrichmentError != "" {
		enr += " (" + cell(e.EnrichmentError, contentWidth) + ")"
	}
	row(w, "Enrichment", enr)
	if e.ExtractionStatus != "" {
		row(w, "Extraction", cell(e.ExtractionStatus, 0))
	}
	row(w, "Created", timeCell(now, e.CreatedAt))
	row(w, "Updated", timeCell(now, e.UpdatedAt))
	if len(e.Metadata) > 0 {
		row(w, "Metadata", cell(jsonString(e.Metadata), 0))
	}
}
