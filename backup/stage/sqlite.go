package stage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/postgram-go/postgram/storage/sqlite"
)

// SQLite is a SQLite store file as a restore target. Nothing may hold it
// open while it is switched (stop the server first): a restore refuses a
// target whose write-ahead log is in use.
type SQLite struct {
	Path string
	// Config configures the staging store (Path is set by Stage).
	Config sqlite.Config
	// Now names the staging and old files. Default time.Now.
	Now func() time.Time
}

func (t SQLite) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Describe implements Target.
func (t SQLite) Describe() string { return t.Path }

// Counts implements Target.
func (t SQLite) Counts(ctx context.Context) (map[string]int64, error) {
	fi, err := os.Stat(t.Path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.Size() == 0) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	cfg := t.Config
	cfg.Path = t.Path
	st, err := sqlite.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if cur, latest, err := st.SchemaVersion(ctx); err != nil {
		return nil, err
	} else if cur < latest {
		return nil, fmt.Errorf("%s has schema version %d of %d: run pgm-admin migrate on it first, or restore to a new path", t.Path, cur, latest)
	}
	return st.BackupRowCounts(ctx)
}

// Stage implements Target: a new file in the target's directory.
func (t SQLite) Stage(ctx context.Context) (Staging, error) {
	path := fmt.Sprintf("%s.restore-%s", t.Path, t.now().UTC().Format("20060102T150405.000000"))
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("%s exists", path)
	}
	cfg := t.Config
	cfg.Path = path
	st, err := sqlite.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &sqliteStaging{t: t, path: path, st: st}
	if err := st.Migrate(ctx); err != nil {
		s.Discard(ctx)
		return nil, err
	}
	return s, nil
}

type sqliteStaging struct {
	t    SQLite
	path string
	st   *sqlite.Store
}

func (s *sqliteStaging) Store() Store     { return s.st }
func (s *sqliteStaging) Describe() string { return s.path }

// Switch implements Staging: the staging file is closed (checkpointed),
// the target's current file is kept under a new name by a hard link, and
// the staging file is renamed over the target (one atomic rename).
func (s *sqliteStaging) Switch(ctx context.Context) (string, error) {
	if err := s.st.Close(); err != nil {
		return "", err
	}
	for _, suffix := range []string{"-wal", "-journal"} {
		if fi, err := os.Stat(s.t.Path + suffix); err == nil && fi.Size() > 0 {
			return "", fmt.Errorf("%s%s exists: another process has the target open (stop the server before restoring)", s.t.Path, suffix)
		}
	}
	if fi, err := os.Stat(s.path + "-wal"); err == nil && fi.Size() > 0 {
		return "", fmt.Errorf("the staging store's log %s-wal was not checkpointed", s.path)
	}
	old := ""
	if _, err := os.Stat(s.t.Path); err == nil {
		old = fmt.Sprintf("%s.pre-restore-%s", s.t.Path, s.t.now().UTC().Format("20060102T150405.000000"))
		if err := os.Link(s.t.Path, old); err != nil {
			return "", fmt.Errorf("keep the old store: %w", err)
		}
	}
	if err := os.Rename(s.path, s.t.Path); err != nil {
		if old != "" {
			os.Remove(old)
		}
		return "", err
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		os.Remove(s.path + suffix)
		os.Remove(s.t.Path + suffix) // empty or stale: belongs to the old file
	}
	if d, err := os.Open(filepath.Dir(s.t.Path)); err == nil {
		d.Sync()
		d.Close()
	}
	return old, nil
}

// Discard implements Staging.
func (s *sqliteStaging) Discard(context.Context) error {
	s.st.Close()
	var errs []error
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(s.path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
