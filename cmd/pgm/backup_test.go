package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/backup"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
)

// TestBackupCommand: pgm backup downloads a checked backup, plain or
// encrypted, refuses a passphrase flag, an existing file and a key
// without the backup scope, and leaves no file when the stream is cut.
func TestBackupCommand(t *testing.T) {
	t.Parallel()
	s := newRealServer(t)
	ctx := context.Background()
	for _, c := range []string{"alpha note", "beta note", "gamma note"} {
		if _, err := s.client.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.pgmbackup")
	r := s.pgm(t, "backup", "--output", plain)
	wantOK(t, r)
	if !strings.Contains(r.stdout, "3 entities") || !strings.Contains(r.stderr, "MiB received") {
		t.Fatalf("backup output:\n%s\n%s", r.stdout, r.stderr)
	}
	scan := func(path string, ids []age.Identity) *backup.Manifest {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		br, err := backup.Open(f, ids)
		if err != nil {
			t.Fatal(err)
		}
		defer br.Close()
		m, err := backup.Scan(br)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := scan(plain, nil); m.Counts[driver.BackupEntities] != 3 {
		t.Fatalf("manifest %+v", m)
	}
	if fi, _ := os.Stat(plain); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if r := s.pgm(t, "backup", "--output", plain); r.code != 2 || !strings.Contains(r.stderr, "exists") {
		t.Fatalf("an existing file: %+v", r)
	}
	if r := s.pgm(t, "backup", "--output", filepath.Join(dir, "x"), "--encrypt", "--passphrase", "hunter2"); r.code != 2 || !strings.Contains(r.stderr, "refused") {
		t.Fatalf("a passphrase flag: %+v", r)
	}
	if r := s.pgm(t, "backup", "--output", filepath.Join(dir, "x"), "--encrypt"); r.code != 2 || !strings.Contains(r.stderr, "PGM_BACKUP_PASSPHRASE") {
		t.Fatalf("no passphrase: %+v", r)
	}

	// Encrypted under a passphrase: no plaintext on disk.
	enc := filepath.Join(dir, "enc.pgmbackup")
	r = runPGM(t, map[string]string{"PGM_API_URL": s.url, "PGM_API_KEY": s.key, "HOME": t.TempDir(), "PGM_BACKUP_PASSPHRASE": "pass phrase"}, "",
		"backup", "--output", enc, "--encrypt", "--quiet")
	wantOK(t, r)
	if r.stderr != "" || !strings.Contains(r.stdout, "encrypted") {
		t.Fatalf("encrypted backup: %+v", r)
	}
	raw, _ := os.ReadFile(enc)
	if !backup.IsEncrypted(raw) || strings.Contains(string(raw), backup.Magic) {
		t.Fatal("the encrypted backup is not encrypted")
	}
	id, _ := age.NewScryptIdentity("pass phrase")
	if m := scan(enc, []age.Identity{id}); m.Counts[driver.BackupEntities] != 3 {
		t.Fatalf("manifest %+v", m)
	}

	// A key without the backup scope.
	key, _, err := postgramtest.Admin(t, s.client).CreateKey(ctx, postgram.KeySpec{Name: "rw", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})
	if err != nil {
		t.Fatal(err)
	}
	r = runPGM(t, map[string]string{"PGM_API_URL": s.url, "PGM_API_KEY": key, "HOME": t.TempDir()}, "", "backup", "--output", filepath.Join(dir, "no"))
	if r.code == 0 || !strings.Contains(r.stderr, "backup") {
		t.Fatalf("a key without the scope: %+v", r)
	}

	// A stream cut short: an error, and no file.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(raw[:0])
		b, _ := os.ReadFile(plain)
		w.Write(b[:len(b)/2])
	}))
	t.Cleanup(cut.Close)
	half := filepath.Join(dir, "half.pgmbackup")
	r = runPGM(t, map[string]string{"PGM_API_URL": cut.URL, "PGM_API_KEY": s.key, "HOME": t.TempDir()}, "", "backup", "--output", half)
	if r.code == 0 || !strings.Contains(r.stderr, "not a complete backup") {
		t.Fatalf("a cut stream: %+v", r)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "half") || strings.Contains(e.Name(), "partial") || e.Name() == "no" || e.Name() == "x" {
			t.Fatalf("left behind: %s", e.Name())
		}
	}
}
