package backup

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"filippo.io/age"
)

// Scheduled backups are named ScheduledPrefix + UTC time + ScheduledExt,
// so that names sort by time. Retention only ever considers such names.
const (
	ScheduledPrefix = "postgram-"
	ScheduledExt    = ".pgmbackup"
	scheduledTime   = "20060102T150405.000Z"
)

// Scheduler writes a backup of Src into Dir every Interval and keeps the
// Keep newest scheduled backups there (postgram-server's BACKUP_INTERVAL,
// BACKUP_DIR and BACKUP_KEEP). A failed backup leaves no file and deletes
// nothing; retention deletes only complete scheduled backups (files with
// their final name, which WriteFile gives a backup only once it is
// written and fsynced), never other files.
type Scheduler struct {
	Src      Source
	Dir      string
	Interval time.Duration
	// Keep is how many scheduled backups to keep (0: all).
	Keep int
	// Recipients encrypt the backups (age).
	Recipients []age.Recipient
	// Log receives a line per backup and per failure. Default: discard.
	Log *slog.Logger
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// OnSuccess, when set, is called with each backup's file and manifest
	// (for example to audit it).
	OnSuccess func(ctx context.Context, file string, m *Manifest)

	mu     sync.Mutex
	status Status
}

// Status is a scheduler's state, safe to show on an open endpoint: times,
// counts and a state, never an error text or a secret.
type Status struct {
	State     string `json:"state"` // pending (none yet), ok or failing
	Interval  string `json:"interval"`
	Keep      int    `json:"keep"`
	Encrypted bool   `json:"encrypted"`
	// LastSuccess and LastFile are the newest successful backup's time and
	// file name (no directory).
	LastSuccess *time.Time `json:"last_success,omitempty"`
	LastFile    string     `json:"last_file,omitempty"`
	LastFailure *time.Time `json:"last_failure,omitempty"`
	// Failures counts the failures since the last success.
	Failures int        `json:"consecutive_failures"`
	Next     *time.Time `json:"next,omitempty"`
}

func (s *Scheduler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Scheduler) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Status returns the scheduler's current state.
func (s *Scheduler) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	if st.State == "" {
		st.State = "pending"
	}
	st.Interval, st.Keep, st.Encrypted = s.Interval.String(), s.Keep, len(s.Recipients) > 0
	return st
}

// Run backs up every Interval until ctx ends. The first backup is due one
// Interval after the newest scheduled backup already in Dir (at once when
// there is none, or it is older than that).
func (s *Scheduler) Run(ctx context.Context) error {
	if s.Interval <= 0 {
		return errors.New("backup schedule: the interval must be positive")
	}
	next := s.now()
	if files, err := s.Scheduled(); err == nil && len(files) > 0 {
		if t, ok := scheduledAt(files[len(files)-1]); ok && t.Add(s.Interval).After(next) {
			next = t.Add(s.Interval)
		}
	}
	for {
		s.mu.Lock()
		n := next
		s.status.Next = &n
		s.mu.Unlock()
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		s.RunOnce(ctx)
		next = s.now().Add(s.Interval)
	}
}

// RunOnce writes one backup now and, when it succeeded, applies the
// retention. It records the outcome in Status and the log.
func (s *Scheduler) RunOnce(ctx context.Context) (string, error) {
	start := s.now().UTC()
	path := filepath.Join(s.Dir, ScheduledPrefix+start.Format(scheduledTime)+ScheduledExt)
	m, err := (*Manifest)(nil), os.MkdirAll(s.Dir, 0o700)
	if err == nil {
		m, err = WriteFile(ctx, path, s.Src, Options{Recipients: s.Recipients, Now: s.Now})
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		at := s.now().UTC()
		s.mu.Lock()
		s.status.State, s.status.LastFailure = "failing", &at
		s.status.Failures++
		fails := s.status.Failures
		s.mu.Unlock()
		s.log().Error("scheduled backup failed; older backups are kept", "dir", s.Dir, "err", err, "consecutive_failures", fails)
		return "", err
	}
	at := s.now().UTC()
	s.mu.Lock()
	s.status.State, s.status.LastSuccess, s.status.LastFile, s.status.Failures = "ok", &at, filepath.Base(path), 0
	s.mu.Unlock()
	fi, _ := os.Stat(path)
	var size int64
	if fi != nil {
		size = fi.Size()
	}
	s.log().Info("scheduled backup written", "file", path, "bytes", size, "encrypted", len(s.Recipients) > 0,
		"entities", m.Counts["entities"], "seconds", m.Seconds)
	if s.OnSuccess != nil {
		s.OnSuccess(ctx, path, m)
	}
	if err := s.prune(path); err != nil {
		s.log().Warn("backup retention: could not delete an old backup", "err", err)
	}
	return path, nil
}

// Scheduled lists the scheduled backups in Dir, oldest first.
func (s *Scheduler) Scheduled() ([]string, error) {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if _, ok := scheduledAt(e.Name()); ok {
			out = append(out, filepath.Join(s.Dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// scheduledAt parses a scheduled backup's name.
func scheduledAt(name string) (time.Time, bool) {
	base := filepath.Base(name)
	if !strings.HasPrefix(base, ScheduledPrefix) || !strings.HasSuffix(base, ScheduledExt) {
		return time.Time{}, false
	}
	t, err := time.Parse(scheduledTime, strings.TrimSuffix(strings.TrimPrefix(base, ScheduledPrefix), ScheduledExt))
	return t, err == nil
}

// prune deletes the scheduled backups older than the Keep newest (never
// the one just written).
func (s *Scheduler) prune(latest string) error {
	if s.Keep <= 0 {
		return nil
	}
	files, err := s.Scheduled()
	if err != nil {
		return err
	}
	var errs []error
	for i := 0; i < len(files)-s.Keep; i++ {
		if files[i] == latest {
			continue
		}
		if err := os.Remove(files[i]); err != nil {
			errs = append(errs, err)
			continue
		}
		s.log().Info("backup retention: deleted an old backup", "file", files[i], "keep", s.Keep)
	}
	return errors.Join(errs...)
}

// ScheduledFile is a scheduled backup in Dir.
type ScheduledFile struct {
	File      string    `json:"file"` // name, no directory
	Bytes     int64     `json:"bytes"`
	CreatedAt time.Time `json:"created_at"`
}

// List lists the scheduled backups in Dir, newest first.
func (s *Scheduler) List() ([]ScheduledFile, error) {
	files, err := s.Scheduled()
	if err != nil {
		return nil, err
	}
	out := make([]ScheduledFile, 0, len(files))
	for i := len(files) - 1; i >= 0; i-- {
		fi, err := os.Stat(files[i])
		if err != nil {
			continue // deleted meanwhile
		}
		at, _ := scheduledAt(files[i])
		out = append(out, ScheduledFile{File: filepath.Base(files[i]), Bytes: fi.Size(), CreatedAt: at})
	}
	return out, nil
}
