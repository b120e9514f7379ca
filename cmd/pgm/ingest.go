package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/cmd/pgm/internal/api"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/wire"
)

func (a *app) ingestCmd() *cobra.Command {
	var (
		in       wire.IngestRequest
		tags     []string
		metadata string
		wait     bool
	)
	c := a.command(&cobra.Command{
		Use:   "ingest URL|FILE|DIR...",
		Short: "Ingest web pages and files as entities (jobs)",
		Long: `Ingest each argument through a server-side job: a URL is fetched, a file
uploaded, a directory's files (not hidden ones) uploaded one by one. The
server extracts the text (HTML main content, PDF, EPUB, Markdown with front
matter, plain text, JSON, YAML), chunks it along its headings and embeds it;
the original bytes are kept. The same content ingested again returns the
entity it made; a URL whose content changed updates its entity.

Without --wait, pgm prints the queued jobs and returns; follow them with
'pgm jobs' or 'pgm watch'. With --wait it shows a progress bar per job and
exits non-zero when one fails.`,
		Example: `  pgm ingest https://example.com/post --tags reading
  pgm ingest notes/ handbook.pdf --type document --wait
  pgm ingest meeting.md --type interaction --metadata '{"project":"lighthouse"}'`,
		Args: cobra.MinimumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		if cmd.Flags().Changed("tags") {
			in.Tags = cleanTags(tags)
		}
		if cmd.Flags().Changed("metadata") {
			var err error
			if in.Metadata, err = parseMetadata(metadata); err != nil {
				return err
			}
		}
		type item struct{ url, path string }
		var items []item
		for _, arg := range args {
			if low := strings.ToLower(arg); strings.HasPrefix(low, "http://") || strings.HasPrefix(low, "https://") {
				items = append(items, item{url: arg})
				continue
			}
			st, err := os.Stat(arg)
			if err != nil {
				return usageErr("%s: not a URL and not a readable file or directory (%v)", arg, errors.Unwrap(err))
			}
			if !st.IsDir() {
				items = append(items, item{path: arg})
				continue
			}
			err = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if p != arg && strings.HasPrefix(d.Name(), ".") {
					if d.IsDir() {
						return filepath.SkipDir
					}
					return nil
				}
				if d.Type().IsRegular() {
					items = append(items, item{path: p})
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("read %s: %w", arg, err)
			}
		}
		if len(items) == 0 {
			return usageErr("nothing to ingest: the directories hold no files")
		}
		cl, err := a.api()
		if err != nil {
			return err
		}
		var jobs []*ingest.Job
		var raws [][]byte
		for _, it := range items {
			var res *wire.JobResponse
			var raw []byte
			if it.url != "" {
				req := in
				req.URL = it.url
				res, raw, err = cl.Ingest(a.ctx, req)
			} else {
				res, raw, err = a.upload(cl, in, it.path)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", it.url+it.path, err)
			}
			jobs = append(jobs, res.Job)
			raws = append(raws, raw)
		}
		if wait {
			if jobs, err = a.follow(cl, jobs); err != nil {
				return err
			}
		}
		if err := a.emit(jobs, joinRaw(raws), func(w io.Writer) error { return jobTable(w, a.now(), jobs) }); err != nil {
			return err
		}
		for _, j := range jobs {
			if j.Status == "failed" || j.Status == "cancelled" {
				return fmt.Errorf("%s: job %s %s: %s", jobSource(j), j.ID, j.Status, j.Error)
			}
		}
		return nil
	})
	f := c.Flags()
	f.StringVar(&in.Type, "type", "", listUsage("entity type (default document)", postgram.EntityTypes))
	f.StringSliceVar(&tags, "tags", nil, "comma-separated tags")
	f.StringVar(&in.Visibility, "visibility", "", listUsage("visibility (default shared)", postgram.Visibilities))
	f.StringVar(&in.Owner, "owner", "", "owner")
	f.StringVar(&metadata, "metadata", "", `JSON object of metadata, e.g. '{"k":1}'`)
	f.BoolVar(&wait, "wait", false, "wait for the jobs to end, with a progress bar per job")
	registerEnumCompletions(c)
	return c
}

func (a *app) upload(cl *api.Client, in wire.IngestRequest, path string) (*wire.JobResponse, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return cl.IngestFile(a.ctx, in, filepath.Base(path), f)
}

// joinRaw makes one JSON array of the raw job responses.
func joinRaw(raws [][]byte) []byte {
	parts := make([]string, len(raws))
	for i, r := range raws {
		parts[i] = strings.TrimSpace(string(r))
	}
	return []byte("[" + strings.Join(parts, ",") + "]")
}

// follow polls the jobs until each has ended, drawing a progress bar per
// job on standard error (redrawn in place on a terminal, a line per stage
// change otherwise).
func (a *app) follow(cl *api.Client, jobs []*ingest.Job) ([]*ingest.Job, error) {
	tty := isTerminal(a.stderr)
	last := make([]string, len(jobs))
	drawn := 0
	for {
		if tty && drawn > 0 {
			fmt.Fprintf(a.stderr, "\x1b[%dA", drawn) // back to the first bar
		}
		drawn = 0
		pending := 0
		for i, j := range jobs {
			line := progressLine(j)
			switch {
			case tty:
				fmt.Fprintf(a.stderr, "\r\x1b[2K%s\n", line)
				drawn++
			case line != last[i]:
				fmt.Fprintln(a.stderr, line)
			}
			last[i] = line
			if !j.Status.Final() {
				pending++
			}
		}
		if pending == 0 {
			return jobs, nil
		}
		select {
		case <-a.ctx.Done():
			return nil, a.ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		for i, j := range jobs {
			if j.Status.Final() {
				continue
			}
			res, _, err := cl.Job(a.ctx, j.ID, "")
			if err != nil {
				return nil, err
			}
			jobs[i] = res.Job
		}
	}
}

// progressLine is "[#####.....]  50% extracting  SOURCE".
func progressLine(j *ingest.Job) string {
	const width = 20
	n := int(j.Progress*width + 0.5)
	bar := strings.Repeat("#", n) + strings.Repeat(".", width-n)
	state := j.Stage
	if j.Status == "done" && j.Duplicate {
		state = "done (already ingested)"
	} else if j.Status == "done" && j.Updated {
		state = "done (updated)"
	} else if j.Status == "failed" {
		state = "failed: " + j.Error
	} else if j.Status == "queued" && j.Attempts > 0 {
		state = "retrying: " + j.Error
	}
	return fmt.Sprintf("[%s] %3d%% %s  %s", bar, int(j.Progress*100+0.5), cell(state, 60), jobSource(j))
}

func jobSource(j *ingest.Job) string {
	switch {
	case j.URL != "":
		return j.URL
	case j.Filename != "":
		return j.Filename
	}
	return "(text)"
}

func jobTable(w io.Writer, now time.Time, jobs []*ingest.Job) error {
	if len(jobs) == 0 {
		_, err := fmt.Fprintln(w, "No jobs.")
		return err
	}
	return table(w, func(w io.Writer) {
		row(w, "JOB", "STATUS", "STAGE", "PROGRESS", "SOURCE", "ENTITY", "UPDATED", "ERROR")
		for _, j := range jobs {
			ent := j.EntityID
			if j.Duplicate {
				ent += " (existing)"
			}
			row(w, j.ID, string(j.Status), j.Stage, strconv.Itoa(int(j.Progress*100+0.5))+"%", cell(jobSource(j), 50),
				ent, relTime(now, j.UpdatedAt), cell(j.Error, 60))
		}
	})
}

func (a *app) jobsCmd() *cobra.Command {
	var q api.JobQuery
	c := a.command(&cobra.Command{
		Use:   "jobs [show|retry|cancel ID]",
		Short: "List ingestion jobs, or show, retry or cancel one",
		Long: `List your ingestion jobs, newest first (every job for an administrator key);
'pgm jobs show ID' prints one, 'pgm jobs retry ID' queues a failed or
cancelled job again, 'pgm jobs cancel ID' stops one.`,
		Example: `  pgm jobs
  pgm jobs --status failed,running
  pgm jobs retry 0193...`,
		Args:              cobra.MaximumNArgs(2),
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		cl, err := a.api()
		if err != nil {
			return err
		}
		if len(args) > 0 {
			if len(args) != 2 {
				return usageErr("pgm jobs %s needs a job id", args[0])
			}
			action := ""
			switch args[0] {
			case "show":
			case "retry", "cancel":
				action = args[0]
			default:
				return usageErr("unknown jobs command %q: show, retry or cancel", args[0])
			}
			res, raw, err := cl.Job(a.ctx, args[1], action)
			if err != nil {
				return err
			}
			return a.emit(res.Job, raw, func(w io.Writer) error { return jobTable(w, a.now(), []*ingest.Job{res.Job}) })
		}
		res, raw, err := cl.Jobs(a.ctx, q)
		if err != nil {
			return err
		}
		return a.emit(res.Jobs, raw, func(w io.Writer) error { return jobTable(w, a.now(), res.Jobs) })
	})
	f := c.Flags()
	f.StringSliceVar(&q.Statuses, "status", nil, "only these statuses: queued, running, done, failed, cancelled")
	f.IntVar(&q.Limit, "limit", 50, "how many jobs (1..500)")
	f.StringVar(&q.Before, "before", "", "page: jobs created before this job id")
	return c
}

func (a *app) watchCmd() *cobra.Command {
	var (
		after int64
		kinds string
	)
	c := a.command(&cobra.Command{
		Use:   "watch",
		Short: "Print live events: entity changes and job progress",
		Long: `Print the server's live events as they happen, one line each (with --json,
one JSON object per line): entities created, updated, archived, enriched,
extracted or purged, and your ingestion jobs' progress, each only when your
key may see it. pgm reconnects after a lost connection and resumes after the
last event it printed. --after resumes after an event seq (0: from the oldest
the server still keeps); --kinds keeps kinds starting with one of the
comma-separated prefixes. Ctrl-C stops.`,
		Example: `  pgm watch
  pgm watch --kinds job --json
  pgm watch --after 0 --kinds entity.created`,
		Args:              cobra.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		if !cmd.Flags().Changed("after") {
			after = -1
		} else if after < 0 {
			return usageErr("--after must be 0 or an event seq")
		}
		cl, err := a.api()
		if err != nil {
			return err
		}
		backoff := 500 * time.Millisecond
		for {
			s, err := cl.Events(a.ctx, after, kinds)
			if err != nil {
				var ue *api.UnreachableError
				if !errors.As(err, &ue) || a.ctx.Err() != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "pgm watch: %s; retrying in %s\n", ue.Reason(), backoff)
			} else {
				backoff = 500 * time.Millisecond
				for {
					ev, err := s.Next()
					if err != nil {
						s.Close()
						break
					}
					after = ev.Seq
					if err := a.printEvent(ev); err != nil {
						s.Close()
						return err
					}
				}
				if a.ctx.Err() != nil {
					return nil
				}
				fmt.Fprintln(a.stderr, "pgm watch: the stream ended; reconnecting")
			}
			select {
			case <-a.ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 10*time.Second)
		}
	})
	f := c.Flags()
	f.Int64Var(&after, "after", 0, "resume after this event seq (0: everything the server keeps; default: from now)")
	f.StringVar(&kinds, "kinds", "", "only kinds starting with one of these comma-separated prefixes (entity, job, ...)")
	return c
}

func (a *app) printEvent(ev wire.Event) error {
	if a.jsonOut || a.toonOut || a.fullResp {
		return writeJSON(a.stdout, ev)
	}
	subject := ev.EntityID
	if ev.JobID != "" {
		subject = "job " + ev.JobID
	}
	_, err := fmt.Fprintf(a.stdout, "%s  %-8d %-17s %s  %s\n", ev.At.Local().Format("15:04:05"), ev.Seq, ev.Kind, subject, string(ev.Data))
	return err
}
