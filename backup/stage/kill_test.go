package stage_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/backup"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
)

// killChildEnv, when set, makes TestKilledBackupLeavesNothing the child
// process: it backs up the SQLite store named by the variable, slowly, to
// the path in killOutEnv, until its parent kills it.
const (
	killChildEnv = "POSTGRAM_TEST_BACKUP_CHILD_DB"
	killOutEnv   = "POSTGRAM_TEST_BACKUP_CHILD_OUT"
)

// slowSource delays every entity the backup reads, so the parent can kill
// the backup while it writes.
type slowSource struct{ backup.Source }

func (s slowSource) ReadBackup(ctx context.Context, sink driver.BackupSink) error {
	entity := sink.Entity
	sink.Entity = func(e *driver.BackupEntity) error {
		time.Sleep(20 * time.Millisecond)
		return entity(e)
	}
	return s.Source.ReadBackup(ctx, sink)
}

// TestKilledBackupLeavesNothing: a backup process killed with SIGKILL
// while it writes leaves no file at its output path, and what it leaves in
// the directory (its temporary file) is refused by a reader as truncated.
func TestKilledBackupLeavesNothing(t *testing.T) {
	if db := os.Getenv(killChildEnv); db != "" {
		st := openSQLite(t, db)
		_, err := backup.WriteFile(context.Background(), os.Getenv(killOutEnv), slowSource{st}, backup.Options{})
		t.Fatalf("the backup ended (%v): it should have been killed", err)
	}
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "store.db")
	st := openSQLite(t, db)
	c := client(t, st)
	for i := range 120 {
		if _, err := c.Store(context.Background(), postgram.StoreInput{Type: postgram.TypeMemory,
			Content: fmt.Sprintf("note %d %s", i, strings.Repeat("filler words for a bigger backup ", 30))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := postgramtest.Admin(t, c).EnrichPending(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out", "killed.pgmbackup")
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestKilledBackupLeavesNothing$", "-test.count", "1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+db, killOutEnv+"="+out)
	var childOut strings.Builder
	cmd.Stdout, cmd.Stderr = &childOut, &childOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it while it writes: its temporary file exists, and the slowed
	// read has gone on for a while.
	var partial string
	deadline := time.Now().Add(30 * time.Second)
	for partial == "" {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the child never started writing its backup")
		}
		time.Sleep(10 * time.Millisecond)
		ents, _ := os.ReadDir(filepath.Dir(out))
		for _, e := range ents {
			if strings.Contains(e.Name(), ".partial-") {
				partial = filepath.Join(filepath.Dir(out), e.Name())
			}
		}
	}
	time.Sleep(500 * time.Millisecond) // 120 entities at 20 ms each: mid-way
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("the child was not killed mid-way (%v):\n%s", cmd.ProcessState, childOut.String())
	}
	if _, err := os.Lstat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a killed backup left its output file (%v)", err)
	}
	f, err := os.Open(partial)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := backup.Open(f, nil)
	if err == nil {
		defer r.Close()
		_, err = r.Each(backup.Records{})
	}
	if err == nil {
		t.Fatal("the killed backup's temporary file reads as a complete backup")
	}
	t.Logf("the temporary file is refused: %v", err)
}

// failingSource fails the backup after its first entity, as a full disk
// or a store error would mid-way.
type failingSource struct{ backup.Source }

var errMidway = errors.New("no space left on device")

func (s failingSource) ReadBackup(ctx context.Context, sink driver.BackupSink) error {
	n := 0
	entity := sink.Entity
	sink.Entity = func(e *driver.BackupEntity) error {
		if n++; n > 1 {
			return errMidway
		}
		return entity(e)
	}
	return s.Source.ReadBackup(ctx, sink)
}

// TestFailedBackupLeavesNothing: a backup that fails mid-way returns the
// error and leaves no file in its directory, neither at its path nor a
// temporary one.
func TestFailedBackupLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := openSQLite(t, filepath.Join(dir, "store.db"))
	c := client(t, st)
	populate(t, c)
	outDir := filepath.Join(dir, "out")
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(outDir, "failed.pgmbackup")
	if _, err := backup.WriteFile(context.Background(), out, failingSource{st}, backup.Options{}); !errors.Is(err, errMidway) {
		t.Fatalf("WriteFile = %v, want the source's error", err)
	}
	ents, err := os.ReadDir(outDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Fatalf("a failed backup left %d files, first %s", len(ents), ents[0].Name())
	}
}
