package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram/cmd/pgm/internal/api"
	"github.com/postgram-go/postgram/syncproto"
)

const syncLong = `Sync a folder of Markdown notes to the server: every *.md file becomes a
document entity (metadata repo, path, title, sha) that search finds, and
later runs send only what changed.

What is synced: files ending in .md under DIR, by their path relative to
DIR. Skipped: directories whose name starts with '.' (.git, .obsidian),
node_modules, any directory holding a .pgmignore or .noindex file (with
everything below it), symbolic links and other files. A file whose name or
content is not valid UTF-8, or that is larger than 1 MiB, stops the sync
before anything is sent, and every such file is listed.

How: pgm sends the SHA-256 manifest of the folder, uploads the new and
changed files in batches of at most 50 files or 4 MiB (each batch is one
server transaction), then finalizes: documents of files that left the
folder are archived, and archived documents of files that came back are
restored. An interrupted sync (Ctrl-C, a lost connection, a server
restart) is resumed by running the same command again, without duplicates
or losses; a run with no change writes nothing.

The repository name (--repo) defaults to DIR's base name. The API key needs
the sync scope, and the delete scope to archive the documents of files that
left the folder (without it such a sync is refused and changes nothing).
Progress is drawn on standard error when it is a terminal
(--quiet turns it off; --progress prints one plain line per batch when it
is not). The summary counts files created, updated, unchanged (restored
files are also unchanged), deleted (archived) and restored.`

func (a *app) syncCmd() *cobra.Command {
	var (
		repo          string
		dryRun, quiet bool
		progress      bool
		batchFiles    int
	)
	c := a.command(&cobra.Command{
		Use:   "sync DIR",
		Short: "Sync a folder of Markdown notes (resumable, sends only changes)",
		Long:  syncLong,
		Example: `  pgm sync ~/notes
  pgm sync ~/work/wiki --repo team-wiki --dry-run
  pgm sync ./docs --quiet --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("pgm sync takes one folder, got %d arguments", len(args))
			}
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
	}, func(cmd *cobra.Command, args []string) error {
		dir := args[0]
		fi, err := os.Stat(dir)
		if err != nil {
			return usageErr("cannot read the folder %s: %v", dir, pathErr(err))
		}
		if !fi.IsDir() {
			return usageErr("%s is not a folder", dir)
		}
		if repo == "" {
			abs, err := filepath.Abs(dir)
			if err != nil {
				return usageErr("cannot resolve %s: %v", dir, err)
			}
			repo = filepath.Base(abs)
			if err := syncproto.CheckRepo(repo); err != nil {
				return usageErr("the folder name %s cannot be the repository name (1-100 letters, digits, '.', '_' or '-', starting with a letter or digit); name it with --repo", strconv.Quote(repo))
			}
		} else if err := syncproto.CheckRepo(repo); err != nil {
			return usageErr("--repo: %v", err)
		}
		if batchFiles < 1 || batchFiles > syncproto.MaxBatchFiles {
			return usageErr("--batch-files must be between 1 and %d", syncproto.MaxBatchFiles)
		}
		cl, err := a.api()
		if err != nil {
			return err
		}
		prog := newSyncProgress(a.stderr, repo, quiet, progress)
		start := a.now()
		sum, err := syncproto.Sync(a.ctx, &api.SyncTransport{C: cl}, dir, syncproto.Options{
			Repo: repo, DryRun: dryRun, MaxBatchFiles: batchFiles, Progress: prog.set})
		prog.finish()
		if err != nil {
			var we *syncproto.WalkError
			if errors.As(err, &we) {
				fmt.Fprintf(a.stderr, "pgm sync: %d file(s) under %s cannot be synced; nothing was sent:\n", len(we.Problems), dir)
				for i, p := range we.Problems {
					if i == problemsToPrint {
						fmt.Fprintf(a.stderr, "  … and %d more\n", len(we.Problems)-problemsToPrint)
						break
					}
					fmt.Fprintf(a.stderr, "  %s: %s\n", displayPath(p.Path), p.Err)
				}
				return usageErr("%d file(s) cannot be synced (listed above): rename or fix them, or exclude their folder with a .pgmignore file", len(we.Problems))
			}
			if prog.total > 0 {
				fmt.Fprintf(a.stderr, "pgm sync: stopped after %d of %d files were uploaded (%d batches committed); run the same command again to resume: nothing is duplicated or lost\n",
					prog.done, prog.total, sumBatches(sum))
			}
			return err
		}
		elapsed := a.now().Sub(start)
		raw, _ := json.Marshal(sum)
		return a.emit(sum, raw, func(w io.Writer) error { return writeSyncSummary(w, dir, sum, elapsed) })
	})
	f := c.Flags()
	f.StringVar(&repo, "repo", "", "repository name on the server (default: the folder's base name)")
	f.BoolVar(&dryRun, "dry-run", false, "only compare with the server and print what a sync would do")
	f.BoolVar(&quiet, "quiet", false, "no progress on standard error")
	f.BoolVar(&progress, "progress", false, "print one progress line per batch on standard error even when it is not a terminal")
	f.IntVar(&batchFiles, "batch-files", syncproto.MaxBatchFiles, fmt.Sprintf("files per upload batch (1-%d)", syncproto.MaxBatchFiles))
	return c
}

// problemsToPrint bounds the walker problems listed on standard error.
const problemsToPrint = 50

func sumBatches(s *syncproto.Summary) int {
	if s == nil {
		return 0
	}
	return s.Batches
}

// pathErr drops the path os.Stat repeats in its error.
func pathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// displayPath quotes a file name that holds control characters, so a
// problem list stays one line per file.
func displayPath(p string) string {
	if strings.IndexFunc(p, func(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' }) >= 0 {
		return strconv.Quote(p)
	}
	return p
}

// writeSyncSummary prints the human summary of a sync or dry run.
func writeSyncSummary(w io.Writer, dir string, s *syncproto.Summary, elapsed time.Duration) error {
	if !s.DryRun {
		_, err := fmt.Fprintf(w, "Synced %d files of %s as %s: %d created, %d updated, %d unchanged, %d deleted, %d restored (%d %s, %s)\n",
			s.Files, dir, s.Repo, s.Created, s.Updated, s.Unchanged, s.Deleted, s.Restored, s.Batches, plural(s.Batches, "batch", "batches"),
			elapsed.Round(10*time.Millisecond))
		if err != nil {
			return err
		}
		for _, fe := range s.Errors {
			if _, err := fmt.Fprintf(w, "  refused  %s: %s\n", displayPath(fe.Path), fe.Message); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := fmt.Fprintf(w, "Dry run: a sync of %d files of %s as %s would create %d, update %d, delete %d and restore %d (%d unchanged); nothing was written\n",
		s.Files, dir, s.Repo, s.Created, s.Updated, s.Deleted, s.Restored, s.Unchanged); err != nil {
		return err
	}
	const maxListed = 20
	list := func(label string, paths []string) {
		for i, p := range paths {
			if i == maxListed {
				fmt.Fprintf(w, "  %-8s … and %d more\n", label, len(paths)-maxListed)
				return
			}
			fmt.Fprintf(w, "  %-8s %s\n", label, displayPath(p))
		}
	}
	var created, updated []string
	for _, it := range s.ToUpload {
		if it.Reason == syncproto.ReasonNew {
			created = append(created, it.Path)
		} else {
			updated = append(updated, it.Path)
		}
	}
	list("create", created)
	list("update", updated)
	list("delete", s.ToDelete)
	list("restore", s.ToRestore)
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// syncProgress reports upload progress on standard error: a
// self-overwriting bar on a terminal, plain lines with --progress
// elsewhere, nothing with --quiet.
type syncProgress struct {
	w           io.Writer
	bar, lines  bool
	label       string
	start, last time.Time
	done, total int
	drawn       bool
	lastLen     int
}

func newSyncProgress(w io.Writer, repo string, quiet, lines bool) *syncProgress {
	p := &syncProgress{w: w, label: "sync " + repo, start: time.Now()}
	if !quiet {
		p.bar = isTerminal(w)
		p.lines = lines && !p.bar
	}
	return p
}

func (p *syncProgress) set(done, total int) {
	p.done, p.total = done, total
	switch {
	case p.lines:
		if done == 0 {
			fmt.Fprintf(p.w, "%s: %d files to upload\n", p.label, total)
		} else {
			fmt.Fprintf(p.w, "%s: uploaded %d of %d files\n", p.label, done, total)
		}
	case p.bar && total > 0:
		if done < total && time.Since(p.last) < 100*time.Millisecond {
			return
		}
		p.last = time.Now()
		p.draw()
	}
}

func (p *syncProgress) draw() {
	const width = 30
	frac := 1.0
	if p.total > 0 {
		frac = min(float64(p.done)/float64(p.total), 1)
	}
	fill := int(frac * width)
	line := fmt.Sprintf("%s [%s%s] %3.0f%% %d/%d files  %s", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill),
		frac*100, p.done, p.total, time.Since(p.start).Round(time.Second))
	pad := ""
	if n := p.lastLen - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	p.lastLen = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
	p.drawn = true
}

// finish ends the bar's line.
func (p *syncProgress) finish() {
	if p.bar && p.drawn {
		p.draw()
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether w is a character device other than /dev/null.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return false
	}
	return true
}
