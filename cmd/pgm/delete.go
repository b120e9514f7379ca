package main

import (
	"fmt"
	"io"

	"github.com/google/uuid"

	"github.com/spf13/cobra"
)

func (a *app) deleteCmd() *cobra.Command {
	return a.command(&cobra.Command{
		Use:   "delete ID",
		Short: "Delete (archive) an entity",
		Long: `Delete an entity. Deletion is soft: the entity is archived and no longer
shows in search or list (unless --include-archived); an administrator can
purge it for good (pgm-admin purge).`,
		Example:           `  pgm delete 123e4567-e89b-12d3-a456-426614174000`,
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
		out, raw, err := cl.Delete(a.ctx, id)
		if err != nil {
			return err
		}
		if out.ID == uuid.Nil {
			out.ID, _ = uuid.Parse(id)
		}
		return a.emit(out, raw, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "Deleted %s (archived)\n", cell(out.ID.String(), 0))
			return err
		})
	})
}
