package main

import (
	"github.com/postgram-go/postgram/llm"

	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
)

// groomer returns the LLM groomer for promotion, durable review and
// rewrites: the configured extraction model (EXTRACTION_ENABLED,
// EXTRACTION_PROVIDER, EXTRACTION_MODEL), or nil, and the library then
// explains what is missing. Tests replace it with a scripted one.
var groomer = func(a *app) llm.Groomer { return a.env.Extraction.Groomer() }

func (a *app) memoryCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "memory",
		Short: "Groom session context and durable memory",
	}
	c.AddCommand(a.memoryGroomCmd(), a.groomDurableCmd(), a.applyDurableCmd())
	return c
}

func (a *app) printGroomResult(res *postgram.GroomResult) error {
	if a.json {
		return json.NewEncoder(a.stdout).Encode(res)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	if len(res.Items) > 0 {
		fmt.Fprintln(tw, "ID\tCLIENT\tACTION\tOUTCOME\tPROMOTED_TO\tCONTENT")
		for _, it := range res.Items {
			to := "-"
			if it.PromotedTo != nil {
				to = it.PromotedTo.String()
			}
			action := it.Action
			if it.Error != "" {
				action += ": " + it.Error
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", it.ID, dash(it.ClientID), action, dash(it.Outcome), to, oneLine(it.Preview, 60))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(a.stdout, "mode %s: %d eligible, %d archived, %d promoted, %d marked, %d rewritten, %d failed\n",
		res.Mode, res.Eligible, res.Archived, res.Promoted, res.Marked, res.Rewrote, res.Failed)
	return err
}

func oneLine(s string, n int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' || c == '\t' || c == '\r' {
			r[i] = ' '
		}
	}
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return string(r)
}

// confirm checks the --dry-run / --yes pair of a destructive command.
func confirm(dryRun, yes bool) error {
	if dryRun && yes {
		return usageError{"--dry-run and --yes cannot be used together"}
	}
	if !dryRun && !yes {
		return usageError{"this command changes data: pass --yes (or preview with --dry-run)"}
	}
	return nil
}

func (a *app) memoryGroomCmd() *cobra.Command {
	var (
		req                  postgram.GroomRequest
		clientID, mode       string
		dryRun, yes, allClis bool
	)
	c := &cobra.Command{
		Use:   "groom",
		Short: "Archive or promote stale session context (one client or all, each scope apart)",
		Long: `Groom session context of one client (--client-id) or of every client
(--all-clients: each client scope is groomed separately; it is batching, not
consolidation). --mode archive archives eligible context; --mode promote lets
the extraction LLM promote what future agents should trust into new
durable_memory entities (metadata.promoted_from / promoted_to and a
promoted_to edge) and archives every source. --dry-run lists the eligible set
without calling the LLM; anything else needs --yes.`,
		Example: `  pgm-admin memory groom --all-clients --older-than 7d --dry-run
  pgm-admin --json memory groom --all-clients --older-than 7d --mode promote --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := confirm(dryRun, yes); err != nil {
				return err
			}
			if cmd.Flags().Changed("client-id") {
				req.ClientID = &clientID
			}
			req.AllClients = allClis
			if req.ClientID == nil && !req.AllClients {
				return usageError{"name the scope: --client-id ID or --all-clients"}
			}
			req.Mode = postgram.GroomMode(mode)
			if dryRun {
				req.Mode = postgram.GroomDryRun
			}
			if err := a.open(cmd.Context()); err != nil {
				return err
			}
			req.Groomer = groomer(a)
			res, err := a.client.GroomSessionContext(cmd.Context(), req)
			if err != nil {
				return err
			}
			return a.printGroomResult(res)
		},
	}
	f := c.Flags()
	f.StringVar(&clientID, "client-id", "", "groom this client's session context")
	f.BoolVar(&allClis, "all-clients", false, "groom every client's session context, each scope separately")
	f.StringVar(&mode, "mode", "archive", "archive or promote")
	f.StringVar(&req.OlderThan, "older-than", "7d", "only context not updated for this long (30m, 4h, 7d, 0d)")
	f.StringVar(&req.Topic, "topic", "", "only this topic")
	f.StringVar(&req.SessionID, "session-id", "", "only this session")
	f.StringArrayVar(&req.Tags, "tag", nil, "only context with this tag (repeatable)")
	f.IntVar(&req.Limit, "limit", 0, "at most this many (default: no cap)")
	f.BoolVar(&dryRun, "dry-run", false, "list the eligible set; change nothing, call no LLM")
	f.BoolVar(&yes, "yes", false, "really groom")
	return c
}

func (a *app) groomDurableCmd() *cobra.Command {
	var (
		req         postgram.DurableGroomRequest
		vis         []string
		dryRun, yes bool
	)
	c := &cobra.Command{
		Use:   "groom-durable",
		Short: "Review durable memories with the extraction LLM (mark keep / needs_grooming / archive / superseded)",
		Long: `Select active durable memories (legacy memories without a memory_role
included) not updated for --older-than and have the extraction LLM classify
each: keep, needs_grooming, archive or superseded. --mode mark writes
metadata.durable_grooming (outcome, reason, reviewed_at, suggestion); it
never rewrites content or changes status (apply-durable-grooming does).`,
		Example: `  pgm-admin memory groom-durable --dry-run --older-than 30d
  pgm-admin memory groom-durable --mode mark --yes --older-than 30d`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := confirm(dryRun, yes); err != nil {
				return err
			}
			if dryRun {
				req.Mode = postgram.GroomDryRun
			}
			for _, v := range vis {
				req.Visibilities = append(req.Visibilities, postgram.Visibility(v))
			}
			if err := a.open(cmd.Context()); err != nil {
				return err
			}
			req.Groomer = groomer(a)
			res, err := a.admin.GroomDurable(cmd.Context(), req)
			if err != nil {
				return err
			}
			return a.printGroomResult(res)
		},
	}
	f := c.Flags()
	c.Flags().StringVar((*string)(&req.Mode), "mode", string(postgram.GroomMark), "mark")
	f.StringVar(&req.OlderThan, "older-than", "30d", "only memories not updated for this long")
	f.StringVar(&req.Topic, "topic", "", "only this topic")
	f.StringArrayVar(&req.Tags, "tag", nil, "only memories with this tag (repeatable)")
	f.StringSliceVar(&vis, "visibility", nil, "only these visibilities")
	f.IntVar(&req.Limit, "limit", 0, "at most this many (default: no cap)")
	f.BoolVar(&dryRun, "dry-run", false, "list candidates; change nothing, call no LLM")
	f.BoolVar(&yes, "yes", false, "really mark")
	return c
}

func (a *app) applyDurableCmd() *cobra.Command {
	var (
		req         postgram.ApplyGroomingRequest
		vis         []string
		yes, dryRun bool
	)
	c := &cobra.Command{
		Use:   "apply-durable-grooming",
		Short: "Apply durable grooming marks: rewrite needs_grooming, archive archive and superseded",
		Long: `Apply the marks of groom-durable. --mode auto (default) rewrites
needs_grooming memories from the stored suggestion (or the extraction LLM)
and archives archive and superseded ones; --mode rewrite or archive does one
half. A rewrite replaces the chunks and queues the memory for embedding
again. --status narrows the outcomes applied.`,
		Example: `  pgm-admin memory apply-durable-grooming --dry-run
  pgm-admin memory apply-durable-grooming --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := confirm(dryRun, yes); err != nil {
				return err
			}
			req.DryRun = dryRun
			for _, v := range vis {
				req.Visibilities = append(req.Visibilities, postgram.Visibility(v))
			}
			if err := a.open(cmd.Context()); err != nil {
				return err
			}
			req.Groomer = groomer(a)
			res, err := a.admin.ApplyDurableGrooming(cmd.Context(), req)
			if err != nil {
				return err
			}
			return a.printGroomResult(res)
		},
	}
	f := c.Flags()
	f.StringVar((*string)(&req.Mode), "mode", string(postgram.ApplyAuto), "auto, rewrite or archive")
	f.StringSliceVar(&req.Outcomes, "status", nil, "only these outcomes (needs_grooming, archive, superseded)")
	f.StringVar(&req.Topic, "topic", "", "only this topic")
	f.StringArrayVar(&req.Tags, "tag", nil, "only memories with this tag (repeatable)")
	f.StringSliceVar(&vis, "visibility", nil, "only these visibilities")
	f.IntVar(&req.Limit, "limit", 0, "at most this many (default: no cap)")
	f.BoolVar(&dryRun, "dry-run", false, "list what would be applied; change nothing")
	f.BoolVar(&yes, "yes", false, "really apply")
	return c
}
