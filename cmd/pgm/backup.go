package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/postgram-go/postgram/backup"
	"github.com/postgram-go/postgram/driver"
)

// backupPassphraseEnv names the variable holding a backup passphrase.
const backupPassphraseEnv = "PGM_BACKUP_PASSPHRASE"

func (a *app) backupCmd() *cobra.Command {
	var (
		out, passphrase string
		encrypt, quiet  bool
		recips          []string
	)
	cmd := a.command(&cobra.Command{
		Use:   "backup --output FILE [--encrypt] [--recipient age1...]",
		Short: "Download a backup of the whole store through the server (needs a key with the backup scope)",
		Long: `backup downloads a consistent backup of the server's store (GET
/api/admin/backup: entities, chunks with embeddings, edges, key hashes, the
audit log, sync state) in Postgram's backup format, which pgm-admin restore
reads. The key needs the backup scope and no type or visibility limits.

--encrypt encrypts it with age under a passphrase: PGM_BACKUP_PASSPHRASE, or
a prompt on the terminal (a passphrase on the command line is refused).
--recipient encrypts it to an age public key (repeatable) instead. The
stream is encrypted as it is written: no unencrypted byte reaches the disk.

While it downloads, pgm checks the stream against its manifest (counts and
checksums). It writes a temporary file next to FILE, and gives it its name
only once it is complete, checked and fsynced; an existing FILE is refused.
Progress goes to standard error (--quiet: none).`,
		Example: `  pgm backup --output postgram.pgmbackup
  PGM_BACKUP_PASSPHRASE=... pgm backup --output postgram.pgmbackup --encrypt`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) error {
		if cmd.Flags().Changed("passphrase") {
			return usageErr("a passphrase on the command line is refused (it leaks through ps and shell history): set %s or answer the prompt on a terminal", backupPassphraseEnv)
		}
		if out == "" {
			return usageErr("--output names the backup file")
		}
		rs, err := a.backupRecipients(encrypt, recips)
		if err != nil {
			return err
		}
		if _, err := os.Lstat(out); err == nil {
			return usageErr("%s already exists: choose another --output", out)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		c, err := a.api()
		if err != nil {
			return err
		}
		body, err := c.Backup(a.ctx)
		if err != nil {
			return err
		}
		defer body.Close()
		prog := &byteProgress{w: a.stderr, bar: !quiet && isTerminal(a.stderr), quiet: quiet, start: time.Now()}
		m, size, err := downloadBackup(out, io.TeeReader(body, prog), rs)
		prog.finish(err == nil)
		if err != nil {
			return err
		}
		if a.jsonOut {
			return json.NewEncoder(a.stdout).Encode(map[string]any{"file": out, "bytes": size, "encrypted": len(rs) > 0, "manifest": m})
		}
		fmt.Fprintf(a.stdout, "backup %s: %s store, %d entities, %d chunks, %d edges, %d keys, %d audit entries; %.1f MiB%s\n",
			out, m.Store, m.Counts[driver.BackupEntities], m.Counts[driver.BackupChunks], m.Counts[driver.BackupEdges],
			m.Counts[driver.BackupKeys], m.Counts[driver.BackupAuditLog], float64(size)/(1<<20),
			map[bool]string{true: ", encrypted", false: ""}[len(rs) > 0])
		return nil
	})
	cmd.Flags().StringVarP(&out, "output", "o", "", "the backup file to write")
	cmd.Flags().BoolVar(&encrypt, "encrypt", false, "encrypt with a passphrase ("+backupPassphraseEnv+" or a prompt)")
	cmd.Flags().StringArrayVar(&recips, "recipient", nil, "encrypt to this age recipient (age1...; repeatable)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on standard error")
	cmd.Flags().StringVar(&passphrase, "passphrase", "", "refused: use "+backupPassphraseEnv+" or the prompt")
	cmd.Flags().MarkHidden("passphrase")
	return cmd
}

// backupRecipients builds the age recipients of a backup (none: plain).
func (a *app) backupRecipients(encrypt bool, recips []string) ([]age.Recipient, error) {
	var out []age.Recipient
	for _, r := range recips {
		rs, err := age.ParseRecipients(strings.NewReader(r))
		if err != nil || len(rs) == 0 {
			return nil, usageErr("--recipient %q is not an age recipient (age1...)", r)
		}
		out = append(out, rs...)
	}
	if !encrypt || len(out) > 0 {
		return out, nil
	}
	p := a.getenv(backupPassphraseEnv)
	if p == "" {
		f, ok := a.stdin.(*os.File)
		if !ok || !term.IsTerminal(int(f.Fd())) {
			return nil, usageErr("no passphrase: set %s (standard input is not a terminal to prompt on)", backupPassphraseEnv)
		}
		fmt.Fprint(a.stderr, "Backup passphrase: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		if err != nil {
			return nil, err
		}
		fmt.Fprint(a.stderr, "Again: ")
		b2, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		if err != nil {
			return nil, err
		}
		if string(b) != string(b2) {
			return nil, usageErr("the passphrases differ")
		}
		if p = string(b); p == "" {
			return nil, usageErr("an empty passphrase")
		}
	}
	sr, err := age.NewScryptRecipient(p)
	if err != nil {
		return nil, err
	}
	return []age.Recipient{sr}, nil
}

// downloadBackup writes the stream src into path (encrypted to rs when
// set) through a temporary file, checking the stream against its manifest
// as it goes; the file gets its name only when the stream was complete
// and correct. It returns the manifest and the file's size.
func downloadBackup(path string, src io.Reader, rs []age.Recipient) (*backup.Manifest, int64, error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return nil, 0, fmt.Errorf("cannot write in %s: %w", dir, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return nil, 0, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	var sink io.Writer = bw
	var aw io.WriteCloser
	if len(rs) > 0 {
		if aw, err = age.Encrypt(bw, rs...); err != nil {
			return nil, 0, err
		}
		sink = aw
	}
	// The checker reads the same bytes through a pipe.
	pr, pw := io.Pipe()
	type checked struct {
		m   *backup.Manifest
		err error
	}
	done := make(chan checked, 1)
	go func() {
		var c checked
		r, err := backup.Open(pr, nil)
		if err == nil {
			c.m, err = backup.Scan(r)
			r.Close()
		}
		c.err = err
		if err != nil {
			pr.CloseWithError(err)
		} else {
			io.Copy(io.Discard, pr) // the stream's end
		}
		done <- c
	}()
	_, cerr := io.Copy(io.MultiWriter(sink, pw), src)
	pw.CloseWithError(cerr)
	c := <-done
	switch {
	case c.err != nil && (cerr == nil || errors.Is(cerr, c.err)):
		return nil, 0, fmt.Errorf("backup download: the stream is not a complete backup (nothing was written to %s): %w", path, c.err)
	case cerr != nil:
		return nil, 0, fmt.Errorf("backup download: %w (nothing was written to %s)", cerr, path)
	}
	if aw != nil {
		if err := aw.Close(); err != nil {
			return nil, 0, err
		}
	}
	if err := bw.Flush(); err != nil {
		return nil, 0, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return nil, 0, fmt.Errorf("fsync %s: %w", tmp, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if err := f.Close(); err != nil {
		return nil, 0, err
	}
	// Link, not rename: it fails instead of replacing a file created at
	// path meanwhile.
	if err := os.Link(tmp, path); err != nil {
		return nil, 0, err
	}
	os.Remove(tmp)
	ok = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return c.m, fi.Size(), nil
}

// byteProgress reports a download's progress on standard error: a
// self-overwriting line on a terminal, a line per 64 MiB elsewhere.
type byteProgress struct {
	w          io.Writer
	bar, quiet bool
	start      time.Time
	last       time.Time
	n, lastN   int64
}

func (p *byteProgress) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	switch {
	case p.quiet:
	case p.bar:
		if time.Since(p.last) >= 100*time.Millisecond {
			p.last = time.Now()
			fmt.Fprintf(p.w, "\rbackup: %.1f MiB  %s   ", float64(p.n)/(1<<20), time.Since(p.start).Round(time.Second))
		}
	case p.n-p.lastN >= 64<<20:
		p.lastN = p.n
		fmt.Fprintf(p.w, "backup: %.0f MiB received\n", float64(p.n)/(1<<20))
	}
	return len(b), nil
}

func (p *byteProgress) finish(ok bool) {
	if p.quiet {
		return
	}
	if p.bar {
		fmt.Fprintln(p.w)
	}
	if ok {
		fmt.Fprintf(p.w, "backup: %.1f MiB received in %s\n", float64(p.n)/(1<<20), time.Since(p.start).Round(100*time.Millisecond))
	}
}
