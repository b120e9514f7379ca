package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/cmd/pgm/internal/api"
	"github.com/postgram-go/postgram/wire"
)

// taskRow is the compact form of a task in a list.
type taskRow struct {
	ID      string   `json:"id"`
	Status  string   `json:"status"`
	Context string   `json:"context,omitempty"`
	DueDate string   `json:"due_date,omitempty"`
	Tags    []string `json:"tags"`
	Version int64    `json:"version"`
	Preview string   `json:"preview"`
}

func metaStr(e *postgram.Entity, k string) string {
	s, _ := e.Metadata[k].(string)
	return s
}

func (a *app) taskCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "task",
		Short: "Manage GTD tasks: add, list, update, complete",
		Long: `Manage tasks the GTD way: capture into the inbox, clarify into next,
waiting, scheduled or someday, and complete. A context (@focus-work, @phone)
says where a task can be done; a due date is 2026-12-01 or an RFC 3339 time.`,
		Example: `  pgm task add "set up monitoring" --context @focus-work --status next
  pgm task list --status next
  pgm task update ID --status waiting --version 1
  pgm task complete ID --version 2`,
	}
	c.AddCommand(a.taskAddCmd(), a.taskListCmd(), a.taskUpdateCmd(), a.taskCompleteCmd())
	return c
}

func (a *app) printTaskWrite(verb string, e *postgram.Entity, raw []byte) error {
	return a.emit(toWriteRow(e), raw, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s task %s (%s, version %d)\n", verb, cell(e.ID.String(), 0), cell(e.Status, 0), e.Version)
		return err
	})
}

func (a *app) taskAddCmd() *cobra.Command {
	var in wire.TaskRequest
	c := a.command(&cobra.Command{
		Use:               "add [content|-]",
		Short:             "Capture a task (status inbox unless --status)",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		content, err := a.contentArg(args)
		if err != nil {
			return err
		}
		in.Content = content
		in.Tags = cleanTags(in.Tags)
		cl, err := a.api()
		if err != nil {
			return err
		}
		e, raw, err := cl.CreateTask(a.ctx, in)
		if err != nil {
			return err
		}
		return a.printTaskWrite("Added", e, raw)
	})
	f := c.Flags()
	f.StringVar(&in.Context, "context", "", "GTD context, e.g. @focus-work")
	f.StringVar(&in.Status, "status", "", listUsage("status (default inbox)", postgram.TaskStatuses))
	f.StringVar(&in.DueDate, "due", "", "due date (2026-12-01 or RFC 3339)")
	f.StringSliceVar(&in.Tags, "tags", nil, "comma-separated tags")
	f.StringVar(&in.Visibility, "visibility", "", listUsage("visibility (default shared)", postgram.Visibilities))
	_ = c.RegisterFlagCompletionFunc("status", enumCompletion(postgram.TaskStatuses))
	return c
}

func (a *app) taskListCmd() *cobra.Command {
	var q api.TaskQuery
	c := a.command(&cobra.Command{
		Use:               "list",
		Short:             "List tasks, newest first",
		Args:              cobra.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		if q.Limit < 0 || q.Offset < 0 {
			return usageErr("--limit and --offset must not be negative")
		}
		q.Tags = cleanTags(q.Tags)
		cl, err := a.api()
		if err != nil {
			return err
		}
		page, raw, err := cl.ListTasks(a.ctx, q)
		if err != nil {
			return err
		}
		rows := make([]taskRow, 0, len(page.Items))
		for _, e := range page.Items {
			if e != nil {
				rows = append(rows, taskRow{ID: e.ID.String(), Status: string(e.Status), Context: metaStr(e, "context"), DueDate: metaStr(e, "due_date"),
					Tags: tagsOf(e), Version: e.Version, Preview: truncate(oneLine(e.Content), previewWidth)})
			}
		}
		return a.emit(rows, raw, func(w io.Writer) error {
			if len(rows) == 0 {
				_, err := fmt.Fprintf(w, "No tasks (%d in total).\n", page.Total)
				return err
			}
			if err := table(w, func(w io.Writer) {
				row(w, "ID", "STATUS", "CONTEXT", "DUE", "VERSION", "TASK")
				for _, r := range rows {
					due := r.DueDate
					if len(due) >= 10 {
						due = due[:10]
					}
					row(w, cell(r.ID, 0), cell(r.Status, 0), cell(r.Context, 0), cell(due, 0), fmt.Sprint(r.Version), cell(r.Preview, contentWidth))
				}
			}); err != nil {
				return err
			}
			_, err := fmt.Fprintf(w, "%d–%d of %d\n", page.Offset+1, page.Offset+len(rows), page.Total)
			return err
		})
	})
	f := c.Flags()
	f.StringSliceVar(&q.Status, "status", nil, listUsage("only these statuses (comma-separated)", postgram.TaskStatuses))
	f.StringVar(&q.Context, "context", "", "only this GTD context")
	f.StringVar(&q.DueBefore, "due-before", "", "only tasks due before this date")
	f.StringVar(&q.DueAfter, "due-after", "", "only tasks due after this date")
	f.StringSliceVar(&q.Tags, "tags", nil, "only tasks with every one of these tags")
	f.IntVar(&q.Limit, "limit", 0, "page size (default 50)")
	f.IntVar(&q.Offset, "offset", 0, "tasks to skip")
	_ = c.RegisterFlagCompletionFunc("status", enumCompletion(postgram.TaskStatuses))
	return c
}

func (a *app) taskUpdateCmd() *cobra.Command {
	var (
		in                                wire.TaskUpdateRequest
		version                           int64
		content, context, status, dueDate string
		tags                              []string
	)
	c := a.command(&cobra.Command{
		Use:               "update ID --version N",
		Short:             "Change a task (optimistic concurrency)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		id, err := entityID(args[0])
		if err != nil {
			return err
		}
		in.Version = &version
		fl := cmd.Flags()
		set := func(name, v string, dst **string) {
			if fl.Changed(name) {
				*dst = &v
			}
		}
		set("content", content, &in.Content)
		set("context", context, &in.Context)
		set("status", status, &in.Status)
		set("due", dueDate, &in.DueDate)
		if fl.Changed("tags") {
			t := cleanTags(tags)
			in.Tags = &t
		}
		if in.Content == nil && in.Context == nil && in.Status == nil && in.DueDate == nil && in.Tags == nil {
			return usageErr("nothing to update: pass at least one of --content, --context, --status, --due, --tags")
		}
		cl, err := a.api()
		if err != nil {
			return err
		}
		e, raw, err := cl.UpdateTask(a.ctx, id, in)
		if err != nil {
			return err
		}
		return a.printTaskWrite("Updated", e, raw)
	})
	f := c.Flags()
	f.Int64Var(&version, "version", 0, "the version you read (required)")
	f.StringVar(&content, "content", "", "new text")
	f.StringVar(&context, "context", "", `new GTD context ("" removes it)`)
	f.StringVar(&status, "status", "", listUsage("new status", postgram.TaskStatuses))
	f.StringVar(&dueDate, "due", "", `new due date ("" removes it)`)
	f.StringSliceVar(&tags, "tags", nil, "new comma-separated tags")
	_ = c.MarkFlagRequired("version")
	_ = c.RegisterFlagCompletionFunc("status", enumCompletion(postgram.TaskStatuses))
	return c
}

func (a *app) taskCompleteCmd() *cobra.Command {
	var version int64
	c := a.command(&cobra.Command{
		Use:               "complete ID --version N",
		Short:             "Mark a task done (records the completion time)",
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
		e, raw, err := cl.CompleteTask(a.ctx, id, version)
		if err != nil {
			return err
		}
		return a.printTaskWrite("Completed", e, raw)
	})
	c.Flags().Int64Var(&version, "version", 0, "the version you read (required)")
	_ = c.MarkFlagRequired("version")
	return c
}
