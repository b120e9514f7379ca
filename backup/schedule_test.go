package backup_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/backup"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/sqlite"
)

// failing is a store whose backups fail while fail is set.
type failing struct {
	backup.Source
	fail bool
}

func (f *failing) ReadBackup(ctx context.Context, sink driver.BackupSink) error {
	if f.fail {
		return errors.New("disk on fire")
	}
	return f.Source.ReadBackup(ctx, sink)
}

// TestScheduler runs scheduled backups at a short interval: they are
// written, encrypted, kept to the retention count, and a failure leaves no
// file and deletes nothing.
func TestScheduler(t *testing.T) {
	ctx := t.Context()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "postgram.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: postgramtest.NewEmbedder(16)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "scheduled backup content"}); err != nil {
		t.Fatal(err)
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Files retention must never touch.
	for _, name := range []string{"manual.pgmbackup", ".postgram-20200101T000000.000Z.pgmbackup.partial-1", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	src := &failing{Source: st}
	s := &backup.Scheduler{Src: src, Dir: dir, Interval: 40 * time.Millisecond, Keep: 2, Recipients: []age.Recipient{id.Recipient()}}
	if got := s.Status(); got.State != "pending" || !got.Encrypted || got.Keep != 2 {
		t.Fatalf("status before: %+v", got)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		files, _ := s.Scheduled()
		if len(files) == 2 && s.Status().LastSuccess != nil {
			time.Sleep(150 * time.Millisecond) // several more runs
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no scheduled backups: %v %+v", files, s.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	files, err := s.Scheduled()
	if err != nil || len(files) != 2 {
		t.Fatalf("after runs, kept %v (%v), want 2", files, err)
	}
	st1 := s.Status()
	if st1.State != "ok" || st1.Failures != 0 || st1.LastFile != filepath.Base(files[1]) {
		t.Fatalf("status: %+v, files %v", st1, files)
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 64)
		n, _ := fh.Read(head)
		if !backup.IsEncrypted(head[:n]) {
			t.Fatalf("%s is not encrypted", f)
		}
		fh.Seek(0, 0)
		r, err := backup.Open(fh, []age.Identity{id})
		if err != nil {
			t.Fatal(err)
		}
		m, err := backup.Scan(r)
		r.Close()
		fh.Close()
		if err != nil || m.Counts[driver.BackupEntities] != 1 {
			t.Fatalf("%s: %+v %v", f, m, err)
		}
	}

	src.fail = true
	for i := 0; i < 3; i++ {
		if _, err := s.RunOnce(ctx); err == nil || !strings.Contains(err.Error(), "disk on fire") {
			t.Fatalf("a failing backup: %v", err)
		}
	}
	after, _ := s.Scheduled()
	if strings.Join(after, ",") != strings.Join(files, ",") {
		t.Fatalf("a failed backup changed the kept backups: %v -> %v", files, after)
	}
	st2 := s.Status()
	if st2.State != "failing" || st2.Failures != 3 || st2.LastFailure == nil || st2.LastSuccess == nil || !st2.LastSuccess.Equal(*st1.LastSuccess) {
		t.Fatalf("status after failures: %+v", st2)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2+3 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("files in the directory: %v", names)
	}
	src.fail = false
	if _, err := s.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Status().State != "ok" {
		t.Fatalf("status after recovery: %+v", s.Status())
	}
}
