package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNewFilesOwnerOnly: a new database and its WAL are readable by their
// owner only.
func TestNewFilesOwnerOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "postgram.db")
	openAt(t, path)
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %o, want 600", filepath.Base(p), mode)
		}
	}
}
