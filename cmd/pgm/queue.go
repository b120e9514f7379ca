package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram/cmd/pgm/internal/api"
	"github.com/postgram-go/postgram/driver"
)

func (a *app) queueCmd() *cobra.Command {
	var q api.QueueQuery
	c := a.command(&cobra.Command{
		Use:   "queue",
		Short: "Show the enrichment (embedding and extraction) queue",
		Long: `Show the enrichment queue: how many entities wait for embedding (and LLM
extraction, when enabled), how many completed or failed, and how old the
oldest pending one is. --include-failures lists recent failures with their
errors.`,
		Example: `  pgm queue
  pgm queue --include-failures --failure-limit 20 --json`,
		Args:              cobra.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		if cmd.Flags().Changed("failure-limit") {
			if q.FailureLimit < 1 {
				return usageErr("--failure-limit must be at least 1")
			}
			q.IncludeFailures = true
		}
		cl, err := a.api()
		if err != nil {
			return err
		}
		st, raw, err := cl.Queue(a.ctx, q)
		if err != nil {
			return err
		}
		return a.emit(st, raw, func(w io.Writer) error {
			now := a.now()
			if err := table(w, func(w io.Writer) {
				row(w, "STAGE", "PENDING", "COMPLETED", "FAILED", "RETRY-ELIGIBLE", "SKIPPED", "OLDEST PENDING")
				em := st.Embedding
				row(w, "embedding", itoa(em.Pending), itoa(em.Completed), itoa(em.Failed), itoa(em.RetryEligible), "-", seconds(em.OldestPendingSecs))
				if ex := st.Extraction; ex != nil {
					row(w, "extraction", itoa(ex.Pending), itoa(ex.Completed), itoa(ex.Failed), "-", itoa(ex.Skipped), "-")
				} else {
					row(w, "extraction", "disabled")
				}
			}); err != nil {
				return err
			}
			if !q.IncludeFailures {
				return nil
			}
			var failures []driver.QueueFailure
			if st.Failures != nil {
				failures = *st.Failures
			}
			if len(failures) == 0 {
				_, err := fmt.Fprintln(w, "\nNo recent failures.")
				return err
			}
			fmt.Fprintln(w, "\nRecent failures:")
			return table(w, func(w io.Writer) {
				row(w, "ID", "TYPE", "STAGE", "UPDATED", "ERROR")
				for _, f := range failures {
					errText := f.Error
					if f.Path != "" {
						errText = f.Path + ": " + errText
					}
					row(w, cell(f.ID.String(), 0), cell(f.Type, 0), cell(f.Kind, 0), relTime(now, f.UpdatedAt), cell(errText, 80))
				}
			})
		})
	})
	f := c.Flags()
	f.BoolVar(&q.IncludeFailures, "include-failures", false, "list recent failures with their errors")
	f.IntVar(&q.FailureLimit, "failure-limit", 0, "how many recent failures to list, 1-100 (implies --include-failures; default: the server's)")
	return c
}

func itoa(n int) string { return strconv.Itoa(n) }
