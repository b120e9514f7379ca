package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
)

const jobCols = `id, kind, status, stage, progress, attempts, max_attempts, last_error, run_at, lease_until,
	cancel_requested, key_id, source_url, sha256, entity_id, input, state, version, created_at, updated_at, finished_at`

func scanJob(row interface{ Scan(...any) error }) (*driver.Job, error) {
	var j driver.Job
	var id, status, input, state string
	var entity sql.NullString
	var runAt, created, updated int64
	var lease, finished sql.NullInt64
	var cancel int64
	if err := row.Scan(&id, &j.Kind, &status, &j.Stage, &j.Progress, &j.Attempts, &j.MaxAttempts, &j.LastError,
		&runAt, &lease, &cancel, &j.KeyID, &j.SourceURL, &j.SHA256, &entity, &input, &state, &j.Version,
		&created, &updated, &finished); err != nil {
		return nil, err
	}
	var err error
	if j.ID, err = uuid.Parse(id); err != nil {
		return nil, fmt.Errorf("job id %q: %w", id, err)
	}
	if entity.Valid {
		eid, err := uuid.Parse(entity.String)
		if err != nil {
			return nil, fmt.Errorf("job entity id %q: %w", entity.String, err)
		}
		j.EntityID = &eid
	}
	j.Status, j.CancelRequested = driver.JobStatus(status), cancel != 0
	j.Input, j.State = []byte(input), []byte(state)
	j.RunAt, j.CreatedAt, j.UpdatedAt = fromMicros(runAt), fromMicros(created), fromMicros(updated)
	j.LeaseUntil, j.FinishedAt = timeOrNil(lease), timeOrNil(finished)
	return &j, nil
}

func entityIDOrNil(id *uuid.UUID) any {
	if id == nil {
		return nil
	}
	return id.String()
}

func jsonOrEmpty(b []byte) string {
	if len(b) == 0 {
		return "{}"
	}
	return string(b)
}

// CreateJob implements driver.JobStorage.
func (s *Store) CreateJob(ctx context.Context, ws string, j *driver.Job) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	if j.Status == "" {
		j.Status = driver.JobQueued
	}
	if j.Stage == "" {
		j.Stage = string(j.Status)
	}
	err := s.write(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO jobs (workspace_id, `+jobCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`,
			ws, j.ID.String(), j.Kind, string(j.Status), j.Stage, j.Progress, j.Attempts, j.MaxAttempts, j.LastError,
			micros(j.RunAt), microsOrNil(j.LeaseUntil), boolInt(j.CancelRequested), j.KeyID, j.SourceURL, j.SHA256,
			entityIDOrNil(j.EntityID), jsonOrEmpty(j.Input), jsonOrEmpty(j.State), micros(now), micros(now), microsOrNil(j.FinishedAt))
		return err
	})
	if isUniqueViolation(err) {
		return fmt.Errorf("sqlite: job %s exists: %w", j.ID, driver.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("sqlite: create job: %w", mapErr(err))
	}
	j.Version, j.CreatedAt, j.UpdatedAt = 1, now, now
	return nil
}

// GetJob implements driver.JobStorage.
func (s *Store) GetJob(ctx context.Context, ws string, id uuid.UUID) (*driver.Job, error) {
	j, err := scanJob(s.queryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE workspace_id = ? AND id = ?`, ws, id.String()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %s: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read job: %w", mapErr(err))
	}
	return j, nil
}

// ListJobs implements driver.JobStorage.
func (s *Store) ListJobs(ctx context.Context, ws string, f driver.JobFilter) ([]driver.Job, error) {
	var where strings.Builder
	args := []any{ws}
	where.WriteString("workspace_id = ?")
	add := func(cond string, a ...any) {
		where.WriteString(" AND " + cond)
		args = append(args, a...)
	}
	if f.Kind != "" {
		add("kind = ?", f.Kind)
	}
	if len(f.Statuses) > 0 {
		ph := strings.TrimSuffix(strings.Repeat("?, ", len(f.Statuses)), ", ")
		a := make([]any, len(f.Statuses))
		for i, st := range f.Statuses {
			a[i] = string(st)
		}
		add("status IN ("+ph+")", a...)
	}
	if f.KeyID != nil {
		add("key_id = ?", *f.KeyID)
	}
	if f.SourceURL != "" {
		add("source_url = ?", f.SourceURL)
	}
	if f.SHA256 != "" {
		add("sha256 = ?", f.SHA256)
	}
	if f.EntityID != nil {
		add("entity_id = ?", f.EntityID.String())
	}
	if f.Before != nil {
		add(`(created_at, id) < (SELECT created_at, id FROM jobs WHERE workspace_id = ? AND id = ?)`, ws, f.Before.String())
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.query(ctx, `SELECT `+jobCols+` FROM jobs WHERE `+where.String()+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list jobs: %w", mapErr(err))
	}
	defer rows.Close()
	var out []driver.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list jobs: %w", err)
		}
		out = append(out, *j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list jobs: %w", mapErr(err))
	}
	return out, nil
}

// ClaimJobs implements driver.JobStorage. SQLite has one writer, so the
// select and the update in one write transaction cannot race.
func (s *Store) ClaimJobs(ctx context.Context, ws, kind string, now time.Time, lease time.Duration, max int) ([]driver.Job, error) {
	if max <= 0 {
		return nil, nil
	}
	nowUS := micros(now)
	until := micros(now.Add(lease))
	var out []driver.Job
	err := s.write(ctx, func(tx *wtx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE jobs SET status = 'running', attempts = attempts + 1,
				lease_until = ?, version = version + 1, updated_at = ?
			WHERE workspace_id = ? AND id IN (
				SELECT id FROM jobs WHERE workspace_id = ? AND kind = ?
				AND ((status = 'queued' AND run_at <= ?) OR (status = 'running' AND lease_until <= ?))
				ORDER BY run_at, id LIMIT ?)
			RETURNING `+jobCols, until, nowUS, ws, ws, kind, nowUS, nowUS, max)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				return err
			}
			out = append(out, *j)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim jobs: %w", mapErr(err))
	}
	return out, nil
}

// UpdateJob implements driver.JobStorage.
func (s *Store) UpdateJob(ctx context.Context, ws string, j *driver.Job) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	var n int64
	err := s.write(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = ?, stage = ?, progress = ?, attempts = ?,
				max_attempts = ?, last_error = ?, run_at = ?, lease_until = ?, cancel_requested = ?,
				source_url = ?, sha256 = ?, entity_id = ?, state = ?, version = version + 1, updated_at = ?, finished_at = ?
			WHERE workspace_id = ? AND id = ? AND version = ?`,
			string(j.Status), j.Stage, j.Progress, j.Attempts, j.MaxAttempts, j.LastError, micros(j.RunAt),
			microsOrNil(j.LeaseUntil), boolInt(j.CancelRequested), j.SourceURL, j.SHA256, entityIDOrNil(j.EntityID),
			jsonOrEmpty(j.State), micros(now), microsOrNil(j.FinishedAt), ws, j.ID.String(), j.Version)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: update job: %w", mapErr(err))
	}
	if n == 0 {
		if _, err := s.GetJob(ctx, ws, j.ID); err != nil {
			return err
		}
		return fmt.Errorf("job %s changed since version %d: %w", j.ID, j.Version, driver.ErrConflict)
	}
	j.Version++
	j.UpdatedAt = now
	return nil
}

// NextJobDue implements driver.JobStorage.
func (s *Store) NextJobDue(ctx context.Context, ws, kind string) (time.Time, bool, error) {
	var at sql.NullInt64
	err := s.queryRow(ctx, `SELECT min(CASE WHEN status = 'queued' THEN run_at ELSE lease_until END) FROM jobs
		WHERE workspace_id = ? AND kind = ? AND status IN ('queued', 'running')`, ws, kind).Scan(&at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("sqlite: next job due: %w", mapErr(err))
	}
	if !at.Valid {
		return time.Time{}, false, nil
	}
	return fromMicros(at.Int64), true, nil
}

const eventCols = `seq, kind, entity_id, job_id, type, visibility, owner, role, client_id, key_id, data, created_at`

// insertEvents inserts events in tx; seq is the rowid, and SQLite's one
// writer makes seqs commit in order.
func insertEvents(ctx context.Context, tx *wtx, ws string, events []driver.ChangeEvent) error {
	// Taken once the write lock is held: the moment of the change.
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i := range events {
		e := &events[i]
		err := tx.QueryRowContext(ctx, `INSERT INTO events (workspace_id, kind, entity_id, job_id, type, visibility,
				owner, role, client_id, key_id, data, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
			ws, e.Kind, uuidOrNil(e.EntityID), uuidOrNil(e.JobID), string(e.Type), string(e.Visibility), e.Owner,
			string(e.Role), e.ClientID, e.KeyID, jsonOrEmpty(e.Data), micros(now)).Scan(&e.Seq)
		if err != nil {
			return err
		}
		e.CreatedAt = now
	}
	return nil
}

// AppendEvents implements driver.EventStorage.
func (s *Store) AppendEvents(ctx context.Context, ws string, events []driver.ChangeEvent) error {
	if len(events) == 0 {
		return nil
	}
	if err := s.write(ctx, func(tx *wtx) error { return insertEvents(ctx, tx, ws, events) }); err != nil {
		return fmt.Errorf("sqlite: append events: %w", mapErr(err))
	}
	s.eventSignal.Notify(ws)
	return nil
}

// EventsSignal implements driver.EventStorage.
func (s *Store) EventsSignal(ws string) <-chan struct{} { return s.eventSignal.Wait(ws) }

func uuidOrNil(id uuid.UUID) any {
	if id == uuid.Nil {
		return nil
	}
	return id.String()
}

func parseOptUUID(s sql.NullString) (uuid.UUID, error) {
	if !s.Valid {
		return uuid.Nil, nil
	}
	return uuid.Parse(s.String)
}

// EventsAfter implements driver.EventStorage.
func (s *Store) EventsAfter(ctx context.Context, ws string, after int64, limit int) ([]driver.ChangeEvent, int64, error) {
	if limit <= 0 {
		limit = 100
	}
	var first sql.NullInt64
	if err := s.queryRow(ctx, `SELECT min(seq) FROM events WHERE workspace_id = ?`, ws).Scan(&first); err != nil {
		return nil, 0, fmt.Errorf("sqlite: event log: %w", mapErr(err))
	}
	rows, err := s.query(ctx, `SELECT `+eventCols+` FROM events WHERE workspace_id = ? AND seq > ? ORDER BY seq LIMIT ?`, ws, after, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: event log: %w", mapErr(err))
	}
	defer rows.Close()
	var out []driver.ChangeEvent
	for rows.Next() {
		var e driver.ChangeEvent
		var entity, job sql.NullString
		var typ, vis, role, data string
		var created int64
		if err := rows.Scan(&e.Seq, &e.Kind, &entity, &job, &typ, &vis, &e.Owner, &role, &e.ClientID, &e.KeyID, &data, &created); err != nil {
			return nil, 0, fmt.Errorf("sqlite: event log: %w", mapErr(err))
		}
		if e.EntityID, err = parseOptUUID(entity); err != nil {
			return nil, 0, fmt.Errorf("sqlite: event %d entity id: %w", e.Seq, err)
		}
		if e.JobID, err = parseOptUUID(job); err != nil {
			return nil, 0, fmt.Errorf("sqlite: event %d job id: %w", e.Seq, err)
		}
		e.Type, e.Visibility, e.Role = driver.EntityType(typ), driver.Visibility(vis), driver.MemoryRole(role)
		e.Data, e.CreatedAt = []byte(data), fromMicros(created)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("sqlite: event log: %w", mapErr(err))
	}
	return out, first.Int64, nil
}

// LastEventSeq implements driver.EventStorage.
func (s *Store) LastEventSeq(ctx context.Context, ws string) (int64, error) {
	var last sql.NullInt64
	if err := s.queryRow(ctx, `SELECT max(seq) FROM events WHERE workspace_id = ?`, ws).Scan(&last); err != nil {
		return 0, fmt.Errorf("sqlite: event log: %w", mapErr(err))
	}
	return last.Int64, nil
}

// PruneEvents implements driver.EventStorage.
func (s *Store) PruneEvents(ctx context.Context, ws string, keep int, olderThan time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM events WHERE workspace_id = ? AND (created_at < ? OR seq <= coalesce(
				(SELECT seq FROM events WHERE workspace_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?), 0))`,
			ws, micros(olderThan), ws, keep)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune events: %w", mapErr(err))
	}
	return int(n), nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
