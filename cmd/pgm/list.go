package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/cmd/pgm/internal/api"
)

func (a *app) listCmd() *cobra.Command {
	var q api.ListQuery
	c := a.command(&cobra.Command{
		Use:   "list",
		Short: "List entities, newest first",
		Long: `List entities, newest first, with optional filters and paging. Rows show a
preview of the content; use 'pgm recall ID' for all of it.`,
		Example: `  pgm list --type memory
  pgm list --tags decisions --limit 20 --offset 20
  pgm list --json`,
		Args:              cobra.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		q.Tags = cleanTags(q.Tags)
		if q.Limit < 0 || q.Offset < 0 {
			return usageErr("--limit and --offset must not be negative")
		}
		cl, err := a.api()
		if err != nil {
			return err
		}
		page, raw, err := cl.List(a.ctx, q)
		if err != nil {
			return err
		}
		rows := make([]listRow, 0, len(page.Items))
		for _, e := range page.Items {
			if e != nil {
				rows = append(rows, toListRow(e))
			}
		}
		return a.emit(rows, raw, func(w io.Writer) error {
			if len(rows) == 0 {
				_, err := fmt.Fprintf(w, "No entities (%d in total).\n", page.Total)
				return err
			}
			now := a.now()
			if err := table(w, func(w io.Writer) {
				row(w, "ID", "TYPE", "STATUS", "VISIBILITY", "TAGS", "UPDATED", "CONTENT")
				for _, r := range rows {
					row(w, cell(r.ID, 0), cell(r.Type, 0), cell(r.Status, 0), cell(r.Visibility, 0), tagCell(r.Tags),
						relTime(now, r.UpdatedAt), cell(r.Preview, contentWidth))
				}
			}); err != nil {
				return err
			}
			first, last := page.Offset+1, page.Offset+len(rows)
			msg := fmt.Sprintf("%d–%d of %d", first, last, page.Total)
			if last < page.Total {
				msg += fmt.Sprintf(" (next page: --offset %d)", last)
			}
			_, err := fmt.Fprintln(w, msg)
			return err
		})
	})
	f := c.Flags()
	f.StringVar(&q.Type, "type", "", listUsage("only this entity type", postgram.EntityTypes))
	f.StringVar(&q.Status, "status", "", listUsage("only this status", postgram.Statuses))
	f.StringVar(&q.Visibility, "visibility", "", listUsage("only this visibility", postgram.Visibilities))
	f.StringVar(&q.Owner, "owner", "", "only this owner")
	f.StringSliceVar(&q.Tags, "tags", nil, "only entities with every one of these comma-separated tags")
	f.StringVar(&q.MemoryRole, "memory-role", "", listUsage("only this memory role", memoryRoles))
	f.IntVar(&q.Limit, "limit", 0, fmt.Sprintf("page size (default %d, at most %d)", postgram.DefaultListLimit, postgram.MaxListLimit))
	f.IntVar(&q.Offset, "offset", 0, "entities to skip")
	f.BoolVar(&q.IncludeArchived, "include-archived", false, "include archived entities")
	registerEnumCompletions(c)
	return c
}
