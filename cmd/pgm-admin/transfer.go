package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram/transfer"
)

func (a *app) exportCmd() *cobra.Command {
	var out string
	var noEmb, quiet bool
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the workspace (entities, chunks, embeddings, edges) as JSON Lines",
		Long: `export writes the configured workspace (POSTGRAM_WORKSPACE) as JSON Lines: a
header naming the workspace and its embedding model, every entity with its
chunks (and their embeddings unless --no-embeddings), every edge, and an end
record with the counts. API keys and the audit log are not exported.
pgm-admin import reads the file into another store, SQLite or PostgreSQL.

The export reads one consistent snapshot in pages and writes line by line,
so it needs little memory however large the workspace. A progress bar is
drawn on standard error when it is a terminal (not with --quiet).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := a.open(ctx); err != nil {
				return err
			}
			ws := a.client.Workspace()
			st, err := a.store.Stats(ctx, ws)
			if err != nil {
				return err
			}
			var w io.Writer = a.stdout
			var f *os.File
			if out != "-" {
				// Write beside the target and rename at the end: a failed
				// export never leaves a partial file under the name asked for.
				f, err = os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".partial-*")
				if err != nil {
					return fmt.Errorf("export: %w", err)
				}
				defer func() {
					if f != nil {
						f.Close()
						os.Remove(f.Name())
					}
				}()
				w = f
			}
			bar := newProgressBar(a.stderr, quiet, "export", int64(st.Entities+st.Edges), "rows")
			n, err := transfer.Export(ctx, a.admin, w, transfer.ExportOptions{NoEmbeddings: noEmb,
				Progress: func(done int) { bar.set(int64(done)) }})
			bar.finish()
			if err != nil {
				return err
			}
			if f != nil {
				if err := f.Sync(); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				if err := f.Close(); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				if err := os.Rename(f.Name(), out); err != nil {
					os.Remove(f.Name())
					f = nil
					return fmt.Errorf("export: %w", err)
				}
				f = nil
			}
			// The summary goes to stderr when the export itself is on stdout.
			sw := a.stdout
			if out == "-" {
				sw = a.stderr
			}
			if a.json {
				return json.NewEncoder(sw).Encode(map[string]any{"workspace": ws, "out": out, "counts": n})
			}
			fmt.Fprintf(sw, "exported workspace %s: %d entities, %d chunks (%d with embeddings), %d edges to %s\n",
				ws, n.Entities, n.Chunks, n.Embeddings, n.Edges, outName(out))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "-", "file to write, or - for standard output")
	cmd.Flags().BoolVar(&noEmb, "no-embeddings", false, "leave embeddings out (the target store re-embeds every chunk)")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress bar")
	return cmd
}

func outName(s string) string {
	if s == "-" {
		return "standard output"
	}
	return s
}

func (a *app) importCmd() *cobra.Command {
	var in string
	var opts transfer.ImportOptions
	var quiet bool
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Read a pgm-admin export into the workspace, keeping ids, versions and timestamps",
		Long: `import reads a file written by pgm-admin export into the configured workspace
(POSTGRAM_WORKSPACE) of this store, keeping every id, version, timestamp,
tag and metadata value. Entities whose chunks arrive with embeddings of the
store's embedding model are ready for vector search at once; the others
are queued for the server's enrichment worker. A store without an active
model adopts the file's; a file embedded with another model is refused
unless --no-embeddings drops its vectors (the store then re-embeds).

An id that already exists in the workspace stops the import (nothing is
ever duplicated) unless --skip-existing. A file (not standard input) is
checked whole before anything is written, so a truncated or damaged file
imports nothing; errors name the line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var r io.Reader = a.stdin
			var size int64
			if in != "-" {
				f, err := os.Open(in)
				if err != nil {
					return usageError{fmt.Sprintf("import: %v", err)}
				}
				defer f.Close()
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					size = fi.Size()
				}
				r = f
			}
			if err := a.open(ctx); err != nil {
				return err
			}
			ws := a.client.Workspace()
			bar := newProgressBar(a.stderr, quiet, "import", size, "bytes")
			opts.Progress = bar.set
			st, err := transfer.Import(ctx, a.admin, r, opts)
			bar.finish()
			if err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"workspace": ws, "stats": st})
			}
			fmt.Fprintf(a.stdout, "imported into workspace %s (exported from %s): %d entities, %d edges; %d chunks, %d embeddings; %d entities queued for embedding",
				ws, st.Header.Workspace, st.Entities, st.Edges, st.Chunks, st.Embeddings, st.Pending)
			if st.SkippedEntities+st.SkippedEdges > 0 {
				fmt.Fprintf(a.stdout, "; skipped %d existing entities and %d existing edges", st.SkippedEntities, st.SkippedEdges)
			}
			fmt.Fprintln(a.stdout)
			return nil
		},
	}
	cmd.Flags().StringVar(&in, "in", "-", "file to read, or - for standard input")
	cmd.Flags().BoolVar(&opts.NoEmbeddings, "no-embeddings", false, "drop the file's embeddings and queue every entity for embedding")
	cmd.Flags().BoolVar(&opts.SkipExisting, "skip-existing", false, "skip entities and edges whose ids exist instead of failing")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress bar")
	return cmd
}

// progressBar draws one self-overwriting line on a terminal; elsewhere
// (a pipe, a file, --quiet) it draws nothing.
type progressBar struct {
	w       io.Writer
	on      bool
	label   string
	total   int64
	unit    string
	start   time.Time
	last    time.Time
	done    int64
	drawn   bool
	lastLen int
}

func newProgressBar(w io.Writer, quiet bool, label string, total int64, unit string) *progressBar {
	return &progressBar{w: w, on: !quiet && isTerminal(w), label: label, total: total, unit: unit, start: time.Now()}
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

func (p *progressBar) set(done int64) {
	p.done = done
	if !p.on || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.draw()
}

func (p *progressBar) draw() {
	var line string
	if p.total > 0 {
		frac := min(float64(p.done)/float64(p.total), 1)
		const width = 30
		fill := int(frac * width)
		line = fmt.Sprintf("%s [%s%s] %3.0f%% %s/%s %s", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill),
			frac*100, human(p.done, p.unit), human(p.total, p.unit), p.unit)
	} else {
		line = fmt.Sprintf("%s %s %s", p.label, human(p.done, p.unit), p.unit)
	}
	line += fmt.Sprintf("  %s", time.Since(p.start).Round(time.Second))
	pad := ""
	if n := p.lastLen - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	p.lastLen = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
	p.drawn = true
}

func (p *progressBar) finish() {
	if !p.on {
		return
	}
	p.draw()
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

func human(n int64, unit string) string {
	if unit != "bytes" {
		return fmt.Sprint(n)
	}
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fK", float64(n)/(1<<10))
	}
	return fmt.Sprint(n)
}
