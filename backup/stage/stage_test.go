package stage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/backup"
	"github.com/postgram-go/postgram/backup/stage"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/syncproto"
)

const dims = 32

type store interface {
	driver.Storage
	driver.BackupStorage
}

func openSQLite(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

func openPostgres(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, postgres.Config{URL: dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

func client(t *testing.T, st driver.Storage) *postgram.Client {
	t.Helper()
	c, err := postgram.New(context.Background(), postgram.Config{Store: st, Embedder: postgramtest.NewEmbedder(dims)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// populate writes a small corpus touching every table.
func populate(t *testing.T, c *postgram.Client) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	var ids []uuid.UUID
	words := []string{"orion", "ledger", "kestrel", "harbor", "quartz", "meadow"}
	for i, typ := range postgram.EntityTypes {
		e, err := c.Store(ctx, postgram.StoreInput{Type: typ, Content: fmt.Sprintf("%s note %d about %s and the migration", words[i], i, words[(i+1)%6]),
			Tags: []string{"t" + fmt.Sprint(i)}, Metadata: map[string]any{"n": i, "name": "Item " + words[i], "nested": map[string]any{"x": 1.5}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Link(ctx, postgram.LinkInput{SourceID: ids[0], TargetID: ids[1], Relation: "mentions", Confidence: ptr(0.7)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := postgramtest.Admin(t, c).CreateKey(ctx, postgram.KeySpec{Name: "agent", Scopes: postgram.AllScopes}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sync().Push(ctx, syncproto.PushRequest{Repo: "notes", Files: []syncproto.UploadFile{{Path: "a.md", SHA: fmt.Sprintf("%x", sha256.Sum256([]byte("synced quartz file"))), Content: "synced quartz file"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, ids[5]); err != nil {
		t.Fatal(err)
	}
	return ids
}

func ptr[T any](v T) *T { return &v }

func passphrase(t *testing.T, p string) ([]age.Recipient, []age.Identity) {
	t.Helper()
	r, err := age.NewScryptRecipient(p)
	if err != nil {
		t.Fatal(err)
	}
	r.SetWorkFactor(10)
	id, err := age.NewScryptIdentity(p)
	if err != nil {
		t.Fatal(err)
	}
	return []age.Recipient{r}, []age.Identity{id}
}

func searchIDs(t *testing.T, c *postgram.Client, q string) []string {
	t.Helper()
	res, err := c.Search(context.Background(), postgram.SearchRequest{Query: q, IncludeArchived: true, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res.Results {
		out = append(out, r.Entity.ID.String())
	}
	sort.Strings(out)
	return out
}

func restoreFile(t *testing.T, path string, ids []age.Identity, target stage.Target, opts stage.Options) (*stage.Result, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := backup.Open(f, ids)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return stage.Restore(context.Background(), r, target, opts)
}

// TestRestoreDrill backs up each backend while writers keep writing,
// restores into the other backend (and the same one) through staging,
// and checks that every write acknowledged before the backup began is
// there, none that started after it ended is, and searches agree.
func TestRestoreDrill(t *testing.T) {
	pgURL := pgtest.Schema(t)
	src := map[string]func() store{
		"sqlite":   func() store { return openSQLite(t, filepath.Join(t.TempDir(), "src.db")) },
		"postgres": func() store { return openPostgres(t, pgURL) },
	}
	for _, from := range []string{"sqlite", "postgres"} {
		t.Run("from_"+from, func(t *testing.T) {
			ctx := context.Background()
			st := src[from]()
			c := client(t, st)
			populate(t, c)
			recip, idents := passphrase(t, "correct horse battery staple")

			// Writers run during the backup; each records when its write
			// was acknowledged.
			type ack struct {
				id         uuid.UUID
				start, end time.Time
			}
			var mu sync.Mutex
			var acks []ack
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						s := time.Now()
						e, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: fmt.Sprintf("concurrent write %d of writer %d", i, w)})
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						acks = append(acks, ack{e.ID, s, time.Now()})
						mu.Unlock()
					}
				}()
			}
			time.Sleep(50 * time.Millisecond)
			path := filepath.Join(t.TempDir(), "b.pgmb")
			before := time.Now()
			m, err := backup.WriteFile(ctx, path, st.(backup.Source), backup.Options{Recipients: recip})
			after := time.Now()
			time.Sleep(30 * time.Millisecond)
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if m.Counts[driver.BackupEntities] < 6 || m.Counts[driver.BackupKeys] != 1 || m.Counts[driver.BackupSyncFiles] != 1 ||
				m.Counts[driver.BackupEdges] < 1 || m.Counts[driver.BackupAuditLog] < 1 || m.Counts[driver.BackupVectors] < 6 {
				t.Fatalf("manifest counts %v", m.Counts)
			}
			raw, _ := os.ReadFile(path)
			if bytes.Contains(raw, []byte("orion")) || !backup.IsEncrypted(raw) {
				t.Fatal("the encrypted backup holds plaintext")
			}

			for _, to := range []string{"sqlite", "postgres"} {
				t.Run("to_"+to, func(t *testing.T) {
					var target stage.Target
					var open func() store
					switch to {
					case "sqlite":
						p := filepath.Join(t.TempDir(), "restored.db")
						target = stage.SQLite{Path: p}
						open = func() store { return openSQLite(t, p) }
					default:
						dsn := pgtest.Schema(t)
						openPostgres(t, dsn).Close()
						target = stage.Postgres{URL: dsn}
						open = func() store { return openPostgres(t, dsn) }
					}
					res, err := restoreFile(t, path, idents, target, stage.Options{})
					if err != nil {
						t.Fatal(err)
					}
					if res.Manifest.Counts[driver.BackupEntities] != m.Counts[driver.BackupEntities] {
						t.Fatalf("restored %v, backed up %v", res.Manifest.Counts, m.Counts)
					}
					rst := open()
					got, err := rst.BackupRowCounts(ctx)
					if err != nil {
						t.Fatal(err)
					}
					for _, tb := range backup.Tables {
						if got[tb] != m.Counts[tb] {
							t.Errorf("%s: %d rows restored, manifest %d", tb, got[tb], m.Counts[tb])
						}
					}
					// The restored workspaces are in the store's directory
					// (a server of many workspaces starts their workers).
					if ws, err := rst.(driver.WorkspaceStorage).Workspaces(ctx); err != nil || len(ws) != 1 || ws[0].Name != "default" {
						t.Errorf("the restored store's workspaces: %+v %v", ws, err)
					}
					rc := client(t, rst)
					for _, a := range acks {
						_, err := rst.GetEntity(ctx, "default", a.id)
						switch {
						case a.end.Before(before) && err != nil:
							t.Errorf("write %s acknowledged before the backup is missing: %v", a.id, err)
						case a.start.After(after) && err == nil:
							t.Errorf("write %s started after the backup is present", a.id)
						}
					}
					for _, q := range []string{"orion", "quartz migration", "kestrel harbor"} {
						want, got := searchIDs(t, c, q), searchIDs(t, rc, q)
						// The source kept writing "concurrent" entities; these queries
						// do not match them.
						if fmt.Sprint(want) != fmt.Sprint(got) {
							t.Errorf("search %q: source %v, restored %v", q, want, got)
						}
					}
					// A second restore over a store with data needs --yes.
					_, err = restoreFile(t, path, idents, target, stage.Options{})
					if !errors.Is(err, stage.ErrNotEmpty) {
						t.Fatalf("restore over data without yes: %v", err)
					}
				})
			}
		})
	}
}

// TestBadBackups: a wrong passphrase, a truncated or bit-flipped file and
// a newer format each fail clearly and leave the target untouched (and no
// staging store behind).
func TestBadBackups(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openSQLite(t, filepath.Join(dir, "src.db"))
	populate(t, client(t, st))
	recip, idents := passphrase(t, "right")
	_, wrong := passphrase(t, "wrong")
	enc := filepath.Join(dir, "enc.pgmb")
	plain := filepath.Join(dir, "plain.pgmb")
	if _, err := backup.WriteFile(ctx, enc, st, backup.Options{Recipients: recip}); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.WriteFile(ctx, plain, st, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.WriteFile(ctx, plain, st, backup.Options{}); !errors.Is(err, backup.ErrExists) {
		t.Fatalf("overwrite: %v", err)
	}
	raw, _ := os.ReadFile(plain)
	encRaw, _ := os.ReadFile(enc)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := bytes.Clone(raw)
	flipped[len(flipped)/2] ^= 0x10
	encFlipped := bytes.Clone(encRaw)
	encFlipped[len(encFlipped)-100] ^= 0x01

	cases := []struct {
		name string
		path string
		ids  []age.Identity
		want error
	}{
		{"wrong passphrase", enc, wrong, backup.ErrWrongKey},
		{"no passphrase", enc, nil, backup.ErrEncrypted},
		{"truncated", write("trunc.pgmb", raw[:len(raw)*2/3]), nil, backup.ErrTruncated},
		{"truncated encrypted", write("etrunc.pgmb", encRaw[:len(encRaw)-50]), idents, backup.ErrCorrupt},
		{"bit flipped", write("flip.pgmb", flipped), nil, backup.ErrCorrupt},
		{"bit flipped encrypted", write("eflip.pgmb", encFlipped), idents, backup.ErrCorrupt},
		{"not a backup", write("junk.pgmb", []byte("hello world, not a backup")), nil, backup.ErrNotBackup},
	}
	target := filepath.Join(dir, "target.db")
	openSQLite(t, target).Close()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := restoreFile(t, tc.path, tc.ids, stage.SQLite{Path: target}, stage.Options{})
			if err == nil {
				t.Fatal("restored a bad backup")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			t.Logf("%s: %v", tc.name, err)
		})
	}
	// The target is untouched and no staging file is left.
	ts := openSQLite(t, target)
	if c, _ := ts.BackupRowCounts(ctx); c[driver.BackupEntities] != 0 {
		t.Fatalf("target changed: %v", c)
	}
	left, _ := filepath.Glob(target + ".restore-*")
	if len(left) > 0 {
		t.Fatalf("staging left behind: %v", left)
	}
}
