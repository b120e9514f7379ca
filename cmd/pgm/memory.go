package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/wire"
)

func (a *app) memoryCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "memory",
		Short: "Session context: store it, groom it",
		Long: `Session context is working memory for resuming a conversation ("where were
we?"). It is visible only to your API key's client, embedded for recall and
never graph-extracted. Durable memory ('pgm store --type memory') is what
future agents should trust. Search session context with
'pgm search --memory-role session_context'.`,
	}
	c.AddCommand(a.sessionContextCmd(), a.groomCmd())
	return c
}

func (a *app) sessionContextCmd() *cobra.Command {
	var (
		in         wire.SessionContextRequest
		promotable bool
	)
	c := a.command(&cobra.Command{
		Use:   "session-context [content|-]",
		Short: "Store working context for this client",
		Example: `  pgm memory session-context "halfway through the importer refactor; next: tests" --topic importer --session-id s42
  pgm memory session-context - --groom-after 4h < notes.txt`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		content, err := a.contentArg(args)
		if err != nil {
			return err
		}
		in.Content = content
		in.Tags = cleanTags(in.Tags)
		if cmd.Flags().Changed("promotable") {
			in.Promotable = &promotable
		}
		cl, err := a.api()
		if err != nil {
			return err
		}
		e, raw, err := cl.StoreSessionContext(a.ctx, in)
		if err != nil {
			return err
		}
		return a.emit(toWriteRow(e), raw, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "Stored session context %s (version %d)\n", cell(e.ID.String(), 0), e.Version)
			return err
		})
	})
	f := c.Flags()
	f.StringVar(&in.SessionID, "session-id", "", "conversation or session id")
	f.StringVar(&in.AgentID, "agent-id", "", "which agent wrote it")
	f.StringVar(&in.Topic, "topic", "", "short topic")
	f.StringSliceVar(&in.Tags, "tags", nil, "comma-separated tags")
	f.StringVar(&in.Visibility, "visibility", "", listUsage("visibility (default shared)", postgram.Visibilities))
	f.BoolVar(&promotable, "promotable", true, "whether grooming may promote it to durable memory")
	f.StringVar(&in.GroomAfter, "groom-after", "", "keep grooming away until then (4h, 7d or RFC 3339)")
	f.StringVar(&in.ExpiresAt, "expires-at", "", "when it stops being useful (age or RFC 3339)")
	return c
}

func (a *app) groomCmd() *cobra.Command {
	var (
		in          wire.GroomRequest
		dryRun, yes bool
	)
	c := a.command(&cobra.Command{
		Use:   "groom",
		Short: "Preview or archive your own stale session context",
		Long: `Groom your own client's session context: --dry-run lists what is eligible,
--yes archives it. Promotion to durable memory is an operator's act
('pgm-admin memory groom --mode promote').`,
		Example: `  pgm memory groom --dry-run --older-than 7d
  pgm memory groom --older-than 14d --topic postgram --tag session-context --yes`,
		Args:              cobra.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		if dryRun && yes {
			return usageErr("--dry-run and --yes cannot be used together")
		}
		if !dryRun && !yes {
			return usageErr("archiving needs --yes (or preview with --dry-run)")
		}
		in.DryRun, in.Confirmed = &dryRun, yes
		in.Tags = cleanTags(in.Tags)
		cl, err := a.api()
		if err != nil {
			return err
		}
		res, raw, err := cl.GroomSessionContext(a.ctx, in)
		if err != nil {
			return err
		}
		return a.emit(res, raw, func(w io.Writer) error { return printGroom(w, a, res) })
	})
	f := c.Flags()
	f.BoolVar(&dryRun, "dry-run", false, "list eligible context; change nothing")
	f.BoolVar(&yes, "yes", false, "archive eligible context")
	f.StringVar(&in.OlderThan, "older-than", "7d", "only context not updated for this long (30m, 4h, 7d, 0d)")
	f.StringVar(&in.Topic, "topic", "", "only this topic")
	f.StringVar(&in.SessionID, "session-id", "", "only this session")
	f.StringArrayVar(&in.Tags, "tag", nil, "only context with this tag (repeatable)")
	f.IntVar(&in.Limit, "limit", 0, "at most this many (default: no cap)")
	return c
}

func printGroom(w io.Writer, a *app, res *wire.GroomResponse) error {
	verb := "Archived"
	if res.DryRun {
		verb = "Would archive"
	}
	if len(res.Items) > 0 {
		now := a.now()
		if err := table(w, func(w io.Writer) {
			row(w, "ID", "ACTION", "TOPIC", "SESSION", "UPDATED", "CONTEXT")
			for _, it := range res.Items {
				row(w, cell(it.ID.String(), 0), cell(it.Action, 0), cell(it.Topic, 0), cell(it.SessionID, 0), relTime(now, it.UpdatedAt), cell(it.Preview, contentWidth))
			}
		}); err != nil {
			return err
		}
	}
	n := res.Archived
	if res.DryRun {
		n = res.EligibleCount
	}
	_, err := fmt.Fprintf(w, "%s %d of %d eligible session contexts", verb, n, res.EligibleCount)
	if err == nil && res.Failed > 0 {
		_, err = fmt.Fprintf(w, " (%d failed)", res.Failed)
	}
	if err == nil {
		_, err = fmt.Fprintln(w, ".")
	}
	return err
}
