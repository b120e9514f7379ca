package rest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/backup"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/wire"
)

func (s *Server) backupRoutes() {
	s.api.HandleFunc("/api/admin/backup", s.backup).Methods(http.MethodGet)
	s.api.HandleFunc("/api/admin/backups", s.backups).Methods(http.MethodGet)
}

// backups lists the server's scheduled backups (names, sizes and times)
// to a key that may take a backup.
func (s *Server) backups(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	if err := c.Principal().CanBackup(); err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := wire.Backups{Items: []backup.ScheduledFile{}}
	if s.cfg.BackupStatus != nil {
		st := s.cfg.BackupStatus()
		resp.Schedule = &st
	}
	if s.cfg.BackupList != nil {
		items, err := s.cfg.BackupList()
		if err != nil {
			s.log.Warn("listing backups failed", "request_id", RequestIDFrom(r.Context()), "err", err)
			s.writeError(w, r, fmt.Errorf("the backup directory cannot be read: %w", postgram.ErrUnavailable))
			return
		}
		resp.Items = items
	}
	s.writeJSON(w, r, http.StatusOK, resp)
}

// backup streams a backup of the key's workspace (backup.Write: the
// versioned, zstd-compressed format with its manifest) to a key with the
// backup scope and no type or visibility limits. The stream ends with the
// manifest: a stream cut short (the store failed mid-way) has none and
// fails every check a restore makes. The client encrypts it if it wants
// (pgm backup --encrypt).
func (s *Server) backup(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	if err := c.Principal().CanBackup(); err != nil {
		s.writeError(w, r, err)
		return
	}
	admin, _, _, err := s.workspaceOf(r.Context(), c)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	src, ok := admin.Storage().(backup.Source)
	if !ok {
		s.writeError(w, r, fmt.Errorf("the %s store cannot be backed up: %w", admin.Storage().Name(), postgram.ErrUnavailable))
		return
	}
	name := backup.ScheduledPrefix + time.Now().UTC().Format("20060102T150405Z") + backup.ScheduledExt
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	fw := &flushWriter{w: w, rc: http.NewResponseController(w)}
	m, err := backup.Write(r.Context(), fw, workspaceSource{Source: src, ws: c.Workspace()}, backup.Options{})
	if err != nil {
		s.log.Warn("backup download failed", "request_id", RequestIDFrom(r.Context()), "err", err)
		return
	}
	_ = fw.rc.Flush()
	if err := admin.RecordAudit(context.WithoutCancel(r.Context()), c.Principal(), "backup.download", map[string]any{
		"entities": m.Counts[driver.BackupEntities], "bytes": fw.n}); err != nil {
		s.log.Warn("backup download: audit failed", "err", err)
	}
}

// flushWriter flushes every MiB, so the response streams (and each flush
// pushes the write deadline forward, see WriteDeadline).
type flushWriter struct {
	w       io.Writer
	rc      *http.ResponseController
	n, last int64
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.n += int64(n)
	if err == nil && f.n-f.last >= 1<<20 {
		f.last = f.n
		_ = f.rc.Flush()
	}
	return n, err
}

// inWorkspace wraps a sink callback so that records of workspaces other
// than ws are left out.
func inWorkspace[T any](ws string, next func(*T) error, of func(*T) string) func(*T) error {
	return func(r *T) error {
		if of(r) != ws {
			return nil
		}
		return next(r)
	}
}

// workspaceSource is the key's workspace of the store: a key never reads
// past its workspace (pgm-admin backup takes every workspace). The
// manifest counts what was written, so the backup restores as a store of
// that one workspace.
type workspaceSource struct {
	backup.Source
	ws string
}

func (s workspaceSource) ReadBackup(ctx context.Context, sink driver.BackupSink) error {
	sink.Entity = inWorkspace(s.ws, sink.Entity, func(e *driver.BackupEntity) string { return e.Workspace })
	sink.Edge = inWorkspace(s.ws, sink.Edge, func(e *driver.BackupEdge) string { return e.Workspace })
	sink.Key = inWorkspace(s.ws, sink.Key, func(k *driver.BackupKey) string { return k.Workspace })
	sink.Audit = inWorkspace(s.ws, sink.Audit, func(a *driver.BackupAudit) string { return a.Workspace })
	sink.SyncFile = inWorkspace(s.ws, sink.SyncFile, func(f *driver.BackupSyncFile) string { return f.Workspace })
	return s.Source.ReadBackup(ctx, sink)
}
