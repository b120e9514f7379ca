package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"filippo.io/age"
	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/backup"
	"github.com/postgram-go/postgram/backup/stage"
	"github.com/postgram-go/postgram/cmd/internal/config"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/storage/sqlite"
)

// passphraseEnv names the variable holding a backup passphrase.
const passphraseEnv = "PGM_BACKUP_PASSPHRASE"

// refusePassphraseFlag adds a hidden --passphrase flag that is refused:
// a passphrase on the command line leaks through ps and shell history.
func refusePassphraseFlag(cmd *cobra.Command) *string {
	var p string
	cmd.Flags().StringVar(&p, "passphrase", "", "refused: use "+passphraseEnv+" or the prompt")
	cmd.Flags().MarkHidden("passphrase")
	return &p
}

func passphraseRefused() error {
	return usageError{"a passphrase on the command line is refused (it leaks through ps and shell history): set " + passphraseEnv + " or answer the prompt on a terminal"}
}

// passphrase returns the backup passphrase: the variable, else a prompt
// on the terminal (twice when confirm).
func (a *app) passphrase(confirm bool) (string, error) {
	if p := a.get(passphraseEnv); p != "" {
		return p, nil
	}
	f, ok := a.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return "", usageError{"no passphrase: set " + passphraseEnv + " (standard input is not a terminal to prompt on)"}
	}
	fmt.Fprint(a.stderr, "Backup passphrase: ")
	p, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(a.stderr)
	if err != nil {
		return "", err
	}
	if confirm {
		fmt.Fprint(a.stderr, "Again: ")
		q, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		if err != nil {
			return "", err
		}
		if string(p) != string(q) {
			return "", usageError{"the passphrases differ"}
		}
	}
	if len(p) == 0 {
		return "", usageError{"an empty passphrase"}
	}
	return string(p), nil
}

// recipients builds the age recipients of a backup.
func (a *app) recipients(encrypt bool, recips []string) ([]age.Recipient, error) {
	var out []age.Recipient
	for _, r := range recips {
		rs, err := age.ParseRecipients(strings.NewReader(r))
		if err != nil || len(rs) == 0 {
			return nil, usageError{fmt.Sprintf("--recipient %q is not an age recipient (age1...)", r)}
		}
		out = append(out, rs...)
	}
	if encrypt && len(out) == 0 {
		p, err := a.passphrase(true)
		if err != nil {
			return nil, err
		}
		sr, err := age.NewScryptRecipient(p)
		if err != nil {
			return nil, err
		}
		out = append(out, sr)
	}
	return out, nil
}

// identities builds what decrypts a backup: --identity files, and the
// passphrase (asked only when the file is encrypted and no identity
// file was given).
func (a *app) identities(files []string, encrypted bool) ([]age.Identity, error) {
	var out []age.Identity
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, usageError{fmt.Sprintf("--identity: %v", err)}
		}
		ids, err := age.ParseIdentities(fh)
		fh.Close()
		if err != nil {
			return nil, usageError{fmt.Sprintf("--identity %s: %v", f, err)}
		}
		out = append(out, ids...)
	}
	if encrypted && len(out) == 0 {
		p, err := a.passphrase(false)
		if err != nil {
			return nil, err
		}
		id, err := age.NewScryptIdentity(p)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

func (a *app) backupCmd() *cobra.Command {
	var out string
	var encrypt bool
	var recips []string
	cmd := &cobra.Command{
		Use:   "backup --output FILE [--encrypt] [--recipient R]...",
		Short: "Write a consistent, compressed (optionally encrypted) backup of the whole store",
		Long: `backup writes every workspace of the store (entities, chunks with their
embeddings, edges, API key hashes, the audit log, sync state, embedding
models) from one consistent snapshot, while the server keeps serving, in
Postgram's versioned backup format (zstd, with a manifest of counts and
SHA-256 checksums). pgm-admin restore reads it into SQLite or PostgreSQL.

--encrypt encrypts it with age under a passphrase: PGM_BACKUP_PASSPHRASE, or
a prompt on the terminal (a passphrase on the command line is refused).
--recipient encrypts it to an age public key (repeatable) instead. When
encrypting, no unencrypted byte is written to disk.

The file is written under a temporary name, fsynced and then given its
name: a backup that fails or is killed never leaves a file that passes as
complete. An existing FILE is refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("passphrase") {
				return passphraseRefused()
			}
			if out == "" {
				return usageError{"--output names the backup file"}
			}
			rs, err := a.recipients(encrypt, recips)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if err := a.open(ctx); err != nil {
				return err
			}
			src, ok := a.store.(backup.Source)
			if !ok {
				return fmt.Errorf("the %s store cannot be backed up", a.store.Name())
			}
			m, err := backup.WriteFile(ctx, out, src, backup.Options{Recipients: rs})
			if err != nil {
				return err
			}
			_ = a.store.AppendAudit(ctx, a.client.Workspace(), &postgram.AuditEntry{ID: uuid.New(), At: time.Now().UTC().Truncate(time.Microsecond),
				KeyID: "admin", ClientID: "pgm-admin", Operation: "admin.backup",
				Details: map[string]any{"file": filepath.Base(out), "encrypted": len(rs) > 0, "entities": m.Counts[driver.BackupEntities]}})
			return a.printManifest(out, len(rs) > 0, m)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the backup file to write")
	cmd.Flags().BoolVar(&encrypt, "encrypt", false, "encrypt with a passphrase ("+passphraseEnv+" or a prompt)")
	cmd.Flags().StringArrayVar(&recips, "recipient", nil, "encrypt to this age recipient (age1...; repeatable)")
	refusePassphraseFlag(cmd)
	cmd.AddCommand(a.backupListCmd())
	return cmd
}

func (a *app) printManifest(path string, encrypted bool, m *backup.Manifest) error {
	if a.json {
		return json.NewEncoder(a.stdout).Encode(map[string]any{"file": path, "encrypted": encrypted, "manifest": m})
	}
	fi, _ := os.Stat(path)
	size := int64(0)
	if fi != nil {
		size = fi.Size()
	}
	fmt.Fprintf(a.stdout, "backup %s: %s store, %d entities, %d chunks (%d embedded), %d edges, %d keys, %d audit entries, %d sync files; %.1f MiB%s in %.1fs\n",
		path, m.Store, m.Counts[driver.BackupEntities], m.Counts[driver.BackupChunks], m.Counts[driver.BackupVectors],
		m.Counts[driver.BackupEdges], m.Counts[driver.BackupKeys], m.Counts[driver.BackupAuditLog], m.Counts[driver.BackupSyncFiles],
		float64(size)/(1<<20), map[bool]string{true: ", encrypted", false: ""}[encrypted], m.Seconds)
	return nil
}

func (a *app) backupListCmd() *cobra.Command {
	var verify bool
	var idFiles []string
	cmd := &cobra.Command{
		Use:   "list [DIR]",
		Short: "List the backups in a directory (default: BACKUP_DIR, else .)",
		Long: `list shows every Postgram backup in DIR with its time, store, model and
size, newest first. Encrypted backups show as such unless a passphrase
(PGM_BACKUP_PASSPHRASE) or --identity can open them. --verify reads each
whole backup and checks it against its manifest.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := a.get("BACKUP_DIR")
			if len(args) == 1 {
				dir = args[0]
			}
			if dir == "" {
				dir = "."
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				return usageError{fmt.Sprintf("backup list: %v", err)}
			}
			ids, err := a.identities(idFiles, false)
			if err != nil {
				return err
			}
			if p := a.get(passphraseEnv); p != "" {
				if id, err := age.NewScryptIdentity(p); err == nil {
					ids = append(ids, id)
				}
			}
			type row struct {
				File      string           `json:"file"`
				Size      int64            `json:"size"`
				Encrypted bool             `json:"encrypted"`
				Header    *backup.Header   `json:"header,omitempty"`
				Manifest  *backup.Manifest `json:"manifest,omitempty"`
				Status    string           `json:"status"`
			}
			var rows []row
			for _, e := range ents {
				if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
					continue
				}
				p := filepath.Join(dir, e.Name())
				f, err := os.Open(p)
				if err != nil {
					continue
				}
				fi, _ := f.Stat()
				head := make([]byte, 40)
				n, _ := io.ReadFull(f, head)
				head = head[:n]
				if !backup.IsEncrypted(head) && !strings.HasPrefix(string(head), backup.Magic) {
					f.Close()
					continue
				}
				rw := row{File: e.Name(), Size: fi.Size(), Encrypted: backup.IsEncrypted(head), Status: "ok"}
				f.Seek(0, io.SeekStart)
				r, err := backup.Open(bufio.NewReader(f), ids)
				switch {
				case errors.Is(err, backup.ErrEncrypted) || errors.Is(err, backup.ErrWrongKey):
					rw.Status = "encrypted"
				case err != nil:
					rw.Status = "bad: " + err.Error()
				default:
					h := r.Header
					rw.Header = &h
					if verify {
						m, err := backup.Scan(r)
						if err != nil {
							rw.Status = "bad: " + err.Error()
						} else {
							rw.Manifest, rw.Status = m, "verified"
						}
					}
					r.Close()
				}
				f.Close()
				rows = append(rows, rw)
			}
			sort.Slice(rows, func(i, j int) bool { return rows[i].File > rows[j].File })
			if a.json {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"items": rows})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "FILE\tCREATED\tSTORE\tMODEL\tSIZE\tENCRYPTED\tSTATUS")
			for _, r := range rows {
				created, store, model := "-", "-", "-"
				if r.Header != nil {
					created, store = r.Header.CreatedAt.Format("2006-01-02 15:04:05Z"), r.Header.Store
				}
				if r.Manifest != nil && r.Manifest.Model != nil {
					model = r.Manifest.Model.Provider + "/" + r.Manifest.Model.Name
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f MiB\t%v\t%s\n", r.File, created, store, model, float64(r.Size)/(1<<20), r.Encrypted, r.Status)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&verify, "verify", false, "read each backup whole and check it against its manifest")
	cmd.Flags().StringArrayVar(&idFiles, "identity", nil, "an age identity file to open encrypted backups")
	return cmd
}

func (a *app) restoreCmd() *cobra.Command {
	var dryRun, yes bool
	var idFiles []string
	cmd := &cobra.Command{
		Use:   "restore FILE [--dry-run] [--yes]",
		Short: "Restore a backup into the store: staged, verified, then switched",
		Long: `restore reads a backup (pgm-admin backup, the server's scheduled backups or
pgm backup) into the configured store, SQLite or PostgreSQL, whichever
backend wrote it:

 1. into a staging store: a new SQLite file next to the target, or a new
    PostgreSQL schema in the target's database;
 2. verified: the backup's manifest is checked while reading, the staging
    store is read back and compared with it (counts and checksums), and a
    smoke search (keyword and vector) must find a restored chunk;
 3. switched atomically (SQLite: a rename; PostgreSQL: schema renames in one
    transaction). The previous data is kept (FILE.pre-restore-TIME, or
    schema <name>_pre_restore_TIME) for you to remove once satisfied.

Stop the server first (a SQLite target in use is refused) and start it
again afterwards. A target holding data needs --yes. An encrypted backup
needs PGM_BACKUP_PASSPHRASE (or the prompt) or --identity. --dry-run reads
and checks the whole backup and the target, and changes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("passphrase") {
				return passphraseRefused()
			}
			ctx := cmd.Context()
			env, err := config.Parse(a.get)
			if err != nil {
				return usageError{err.Error()}
			}
			f, err := os.Open(args[0])
			if err != nil {
				return usageError{fmt.Sprintf("restore: %v", err)}
			}
			defer f.Close()
			head := make([]byte, 40)
			n, _ := io.ReadFull(f, head)
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			ids, err := a.identities(idFiles, backup.IsEncrypted(head[:n]))
			if err != nil {
				return err
			}
			r, err := backup.Open(f, ids)
			if err != nil {
				return fmt.Errorf("restore %s: %w", args[0], err)
			}
			defer r.Close()
			var target stage.Target
			if env.DatabaseURL != "" {
				target = stage.Postgres{URL: env.DatabaseURL}
			} else {
				path := env.SQLitePath()
				if path == "" {
					return usageError{"no store configured: set POSTGRAM_DATA_DIR or DATABASE_URL"}
				}
				target = stage.SQLite{Path: path, Config: sqlite.Config{Durable: env.SQLiteDurable}}
			}
			opts := stage.Options{Yes: yes, DryRun: dryRun, Log: func(format string, args ...any) {
				fmt.Fprintf(a.stderr, format+"\n", args...)
			}}
			if e, err := env.Embedder(); err == nil && e != nil {
				m := e.Model()
				opts.Model = &m
			}
			res, err := stage.Restore(ctx, r, target, opts)
			if err != nil {
				if errors.Is(err, stage.ErrNotEmpty) {
					return usageError{err.Error()}
				}
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(res)
			}
			m := res.Manifest
			verb := "restored"
			if res.DryRun {
				verb = "dry run: would restore"
			}
			fmt.Fprintf(a.stdout, "%s %d entities, %d chunks (%d embedded), %d edges, %d keys, %d audit entries, %d sync files from a %s backup of %s into %s (%.1fs)\n",
				verb, m.Counts[driver.BackupEntities], m.Counts[driver.BackupChunks], m.Counts[driver.BackupVectors], m.Counts[driver.BackupEdges],
				m.Counts[driver.BackupKeys], m.Counts[driver.BackupAuditLog], m.Counts[driver.BackupSyncFiles], m.Store,
				m.CreatedAt.Format("2006-01-02 15:04:05Z"), res.Target, res.Seconds)
			if res.Old != "" {
				fmt.Fprintf(a.stdout, "the previous data is kept in %s; remove it once satisfied\n", res.Old)
			}
			for _, w := range res.Warnings {
				fmt.Fprintln(a.stdout, "warning:", w)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "read and check the backup and the target; change nothing")
	cmd.Flags().BoolVar(&yes, "yes", false, "replace a target that holds data (its data is kept aside)")
	cmd.Flags().StringArrayVar(&idFiles, "identity", nil, "an age identity file (for backups encrypted to a recipient)")
	refusePassphraseFlag(cmd)
	return cmd
}
