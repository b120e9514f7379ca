package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/driver"
)

const jobCols = `id, kind, status, stage, progress, attempts, max_attempts, last_error, run_at, lease_until,
	cancel_requested, key_id, source_url, sha256, entity_id, input::text, state::text, version, created_at, updated_at, finished_at`

func scanJob(row pgx.Row) (*driver.Job, error) {
	var j driver.Job
	var status, input, state string
	if err := row.Scan(&j.ID, &j.Kind, &status, &j.Stage, &j.Progress, &j.Attempts, &j.MaxAttempts, &j.LastError,
		&j.RunAt, &j.LeaseUntil, &j.CancelRequested, &j.KeyID, &j.SourceURL, &j.SHA256, &j.EntityID, &input, &state,
		&j.Version, &j.CreatedAt, &j.UpdatedAt, &j.FinishedAt); err != nil {
		return nil, err
	}
	j.Status, j.Input, j.State = driver.JobStatus(status), []byte(input), []byte(state)
	return &j, nil
}

func jsonOrEmpty(b []byte) string {
	if len(b) == 0 {
		return "{}"
	}
	return string(b)
}

// CreateJob implements driver.JobStorage.
func (s *Store) CreateJob(ctx context.Context, ws string, j *driver.Job) error {
	ctx = withWS(ctx, ws)
	now := time.Now().UTC().Truncate(time.Microsecond)
	if j.Status == "" {
		j.Status = driver.JobQueued
	}
	if j.Stage == "" {
		j.Stage = string(j.Status)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO jobs (workspace_id, id, kind, status, stage, progress, attempts, max_attempts,
			last_error, run_at, lease_until, cancel_requested, key_id, source_url, sha256, entity_id, input, state, version,
			created_at, updated_at, finished_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17::jsonb, $18::jsonb, 1, $19, $19, $20)`,
		ws, j.ID, j.Kind, string(j.Status), j.Stage, j.Progress, j.Attempts, j.MaxAttempts, j.LastError, j.RunAt,
		j.LeaseUntil, j.CancelRequested, j.KeyID, j.SourceURL, j.SHA256, j.EntityID, jsonOrEmpty(j.Input),
		jsonOrEmpty(j.State), now, j.FinishedAt)
	if isUniqueViolation(err) {
		return fmt.Errorf("postgres: job %s exists: %w", j.ID, driver.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("postgres: create job: %w", mapErr(err))
	}
	j.Version, j.CreatedAt, j.UpdatedAt = 1, now, now
	return nil
}

// GetJob implements driver.JobStorage.
func (s *Store) GetJob(ctx context.Context, ws string, id uuid.UUID) (*driver.Job, error) {
	ctx = withWS(ctx, ws)
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE workspace_id = $1 AND id = $2`, ws, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("job %s: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read job: %w", mapErr(err))
	}
	return j, nil
}

// ListJobs implements driver.JobStorage.
func (s *Store) ListJobs(ctx context.Context, ws string, f driver.JobFilter) ([]driver.Job, error) {
	ctx = withWS(ctx, ws)
	var where strings.Builder
	args := []any{ws}
	where.WriteString("workspace_id = $1")
	add := func(cond string, a any) {
		args = append(args, a)
		where.WriteString(" AND " + strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args))))
	}
	if f.Kind != "" {
		add("kind = $?", f.Kind)
	}
	if len(f.Statuses) > 0 {
		st := make([]string, len(f.Statuses))
		for i, v := range f.Statuses {
			st[i] = string(v)
		}
		add("status = ANY($?)", st)
	}
	if f.KeyID != nil {
		add("key_id = $?", *f.KeyID)
	}
	if f.SourceURL != "" {
		add("source_url = $?", f.SourceURL)
	}
	if f.SHA256 != "" {
		add("sha256 = $?", f.SHA256)
	}
	if f.EntityID != nil {
		add("entity_id = $?", *f.EntityID)
	}
	if f.Before != nil {
		add("(created_at, id) < (SELECT created_at, id FROM jobs b WHERE b.workspace_id = $1 AND b.id = $?)", *f.Before)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	args = append(args, limit)
	rows, err := s.pool.Query(ctx, `SELECT `+jobCols+` FROM jobs WHERE `+where.String()+
		` ORDER BY created_at DESC, id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list jobs: %w", mapErr(err))
	}
	defer rows.Close()
	var out []driver.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list jobs: %w", mapErr(err))
		}
		out = append(out, *j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list jobs: %w", mapErr(err))
	}
	return out, nil
}

// ClaimJobs implements driver.JobStorage: FOR UPDATE SKIP LOCKED lets
// every server on the database claim from one queue without waiting on
// each other or taking the same job.
func (s *Store) ClaimJobs(ctx context.Context, ws, kind string, now time.Time, lease time.Duration, max int) ([]driver.Job, error) {
	if max <= 0 {
		return nil, nil
	}
	ctx = withWS(ctx, ws)
	rows, err := s.pool.Query(ctx, `UPDATE jobs j SET status = 'running', attempts = j.attempts + 1,
			lease_until = $4, version = j.version + 1, updated_at = $3
		FROM (SELECT id FROM jobs WHERE workspace_id = $1 AND kind = $2
			AND ((status = 'queued' AND run_at <= $3) OR (status = 'running' AND lease_until <= $3))
			ORDER BY run_at, id LIMIT $5 FOR UPDATE SKIP LOCKED) due
		WHERE j.workspace_id = $1 AND j.id = due.id
		RETURNING `+prefixCols("j.", jobCols), ws, kind, now, now.Add(lease), max)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim jobs: %w", mapErr(err))
	}
	defer rows.Close()
	var out []driver.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: claim jobs: %w", mapErr(err))
		}
		out = append(out, *j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: claim jobs: %w", mapErr(err))
	}
	return out, nil
}

// prefixCols qualifies each column of a comma-separated list.
func prefixCols(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// UpdateJob implements driver.JobStorage.
func (s *Store) UpdateJob(ctx context.Context, ws string, j *driver.Job) error {
	ctx = withWS(ctx, ws)
	now := time.Now().UTC().Truncate(time.Microsecond)
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET status = $4, stage = $5, progress = $6, attempts = $7,
			max_attempts = $8, last_error = $9, run_at = $10, lease_until = $11, cancel_requested = $12,
			source_url = $13, sha256 = $14, entity_id = $15, state = $16::jsonb, version = version + 1,
			updated_at = $17, finished_at = $18
		WHERE workspace_id = $1 AND id = $2 AND version = $3`,
		ws, j.ID, j.Version, string(j.Status), j.Stage, j.Progress, j.Attempts, j.MaxAttempts, j.LastError, j.RunAt,
		j.LeaseUntil, j.CancelRequested, j.SourceURL, j.SHA256, j.EntityID, jsonOrEmpty(j.State), now, j.FinishedAt)
	if err != nil {
		return fmt.Errorf("postgres: update job: %w", mapErr(err))
	}
	if tag.RowsAffected() == 0 {
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
	ctx = withWS(ctx, ws)
	var at *time.Time
	err := s.pool.QueryRow(ctx, `SELECT min(CASE WHEN status = 'queued' THEN run_at ELSE lease_until END) FROM jobs
		WHERE workspace_id = $1 AND kind = $2 AND status IN ('queued', 'running')`, ws, kind).Scan(&at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("postgres: next job due: %w", mapErr(err))
	}
	if at == nil {
		return time.Time{}, false, nil
	}
	return *at, true, nil
}

// EventChannelPrefix starts the NotifyChannel payload that tells listeners
// a workspace's event log grew: "events:<workspace>".
const EventChannelPrefix = "events:"

func nilUUID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}

// insertEventsTx inserts events, unsequenced, in tx (the sequencer
// notifies the change feed once it has numbered them). created_at is the moment of the insert
// (clock_timestamp), not the transaction's start.
func (s *Store) insertEventsTx(ctx context.Context, tx pgx.Tx, ws string, events []driver.ChangeEvent) error {
	if len(events) == 0 {
		return nil
	}
	kinds, ents, jobs, types, vis, owners, roles, clients, keys, data := eventArrays(events)
	_, err := tx.Exec(ctx, `INSERT INTO events (workspace_id, kind, entity_id, job_id, type, visibility, owner, role, client_id, key_id, data, created_at)
		SELECT $1, u.kind, u.ent, u.job, u.typ, u.vis, u.owner, u.role, u.client, u.key, u.data::jsonb,
			date_trunc('microseconds', clock_timestamp())
		FROM unnest($2::text[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
			WITH ORDINALITY AS u(kind, ent, job, typ, vis, owner, role, client, key, data, n)
		ORDER BY u.n`,
		ws, kinds, ents, jobs, types, vis, owners, roles, clients, keys, data)
	return err
}

// eventArrays turns events into the column arrays the inserts unnest.
func eventArrays(events []driver.ChangeEvent) (kinds []string, ents, jobs []*uuid.UUID, types, vis, owners, roles, clients, keys, data []string) {
	n := len(events)
	kinds, ents, jobs = make([]string, n), make([]*uuid.UUID, n), make([]*uuid.UUID, n)
	types, vis, owners, roles = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	clients, keys, data = make([]string, n), make([]string, n), make([]string, n)
	for i, e := range events {
		kinds[i], ents[i], jobs[i] = e.Kind, nilUUID(e.EntityID), nilUUID(e.JobID)
		types[i], vis[i], owners[i], roles[i] = string(e.Type), string(e.Visibility), e.Owner, string(e.Role)
		clients[i], keys[i], data[i] = e.ClientID, e.KeyID, jsonOrEmpty(e.Data)
	}
	return
}

// AppendEvents implements driver.EventStorage. Job events are numbered as
// they are inserted, in one round trip: a batch outside a transaction runs
// as one implicit transaction that takes the log's lock, then inserts with
// seqs after the highest (the insert's snapshot is taken once the lock is
// held), and commits before the lock is released.
func (s *Store) AppendEvents(ctx context.Context, ws string, events []driver.ChangeEvent) error {
	if len(events) == 0 {
		return nil
	}
	ctx = withWS(ctx, ws)
	kinds, ents, jobs, types, vis, owners, roles, clients, keys, data := eventArrays(events)
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended('postgram.events:' || $1, 0))`, ws)
	b.Queue(`WITH base AS (
			SELECT coalesce(max(seq), 0) AS b FROM events WHERE workspace_id = $1 AND seq IS NOT NULL
		), ins AS (
			INSERT INTO events (workspace_id, seq, kind, entity_id, job_id, type, visibility, owner, role, client_id, key_id, data, created_at)
			SELECT $1, base.b + u.n, u.kind, u.ent, u.job, u.typ, u.vis, u.owner, u.role, u.client, u.key, u.data::jsonb,
				date_trunc('microseconds', clock_timestamp())
			FROM base, unnest($2::text[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
				WITH ORDINALITY AS u(kind, ent, job, typ, vis, owner, role, client, key, data, n)
			RETURNING seq, created_at
		)
		SELECT seq, created_at, pg_notify($12, $13) IS NULL FROM ins ORDER BY seq`,
		ws, kinds, ents, jobs, types, vis, owners, roles, clients, keys, data, s.cfg.NotifyChannel, EventChannelPrefix+ws)
	err := s.retryAborted(ctx, func() error {
		br := s.pool.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
		rows, err := br.Query()
		if err != nil {
			br.Close()
			return err
		}
		i := 0
		for rows.Next() {
			var ignored bool
			if i < len(events) {
				if err := rows.Scan(&events[i].Seq, &events[i].CreatedAt, &ignored); err != nil {
					rows.Close()
					br.Close()
					return err
				}
			}
			i++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			br.Close()
			return err
		}
		return br.Close()
	})
	if err != nil {
		return fmt.Errorf("postgres: append events: %w", mapErr(err))
	}
	s.eventSignal.Notify(ws)
	return nil
}

// eventsCommitted is called once a transaction that inserted events has
// committed, before the write returns. It leaves the numbering to the
// store's numberer, one goroutine that numbers each workspace's pending
// events in one statement per round, so a burst of concurrent writes is
// numbered together and no writer spends round trips on the log's lock
// (writers waiting for it to number their own events serialised on it:
// 1,180 stores/s fell to 150-390; writers trying it took four round trips
// per write). A reader numbers what is still pending before it reads
// (EventsAfter, LastEventSeq, waiting for the lock), so a write's events
// are readable once it returns; events whose writer died are numbered by
// the next reader or numbering.
func (s *Store) eventsCommitted(ws string) {
	// The write committed: reads of ws by this process must see it, so a
	// replica serves them only once it has replayed it (positions; the
	// tracer cannot tell a write whose statement is a SELECT).
	if s.positions != nil {
		s.positions.wrote(ws)
	}
	s.numbering.request(ws)
}

// numberer numbers committed events off the write path (eventsCommitted).
type numberer struct {
	mu      sync.Mutex
	pending map[string]bool
	wake    chan struct{}
}

func (n *numberer) request(ws string) {
	n.mu.Lock()
	if n.pending == nil {
		n.pending = map[string]bool{}
	}
	n.pending[ws] = true
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// take returns the workspaces waiting for numbering and forgets them.
func (n *numberer) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.pending))
	for ws := range n.pending {
		out = append(out, ws)
	}
	clear(n.pending)
	return out
}

// numberGap is the least time between the starts of two numbering rounds:
// under a steady stream of writes a round then numbers several writes'
// events (each round costs a statement that reads the log's index, and
// took as many rounds as writes at 240 stores/s). Readers number what is
// pending themselves, so only the change feed's notification can wait
// this long.
const numberGap = 5 * time.Millisecond

// numberLoop runs the numberer until ctx ends.
func (s *Store) numberLoop(ctx context.Context) {
	hold := time.NewTimer(0)
	defer hold.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.numbering.wake:
		}
		if wait := numberGap - time.Since(last); wait > 0 {
			hold.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-hold.C:
			}
		}
		last = time.Now()
		for _, ws := range s.numbering.take() {
			nctx, cancel := context.WithTimeout(withWS(ctx, ws), 30*time.Second)
			if err := s.sequenceEvents(nctx, ws); err != nil && ctx.Err() == nil {
				s.log.Warn("numbering the event log failed; the next reader will", "workspace", ws, "err", err)
			}
			cancel()
		}
	}
}

// sequenceEvents numbers the workspace's committed, unsequenced events
// after its highest seq, in insertion order, under a transaction-scoped
// advisory lock held until the numbers commit: seqs therefore become
// visible in increasing order. The lock and the numbering go in one round
// trip (two statements: the second takes its snapshot once the lock is
// held, so it sees the previous holder's numbers).
func (s *Store) sequenceEvents(ctx context.Context, ws string) error {
	// One round trip: a batch outside a transaction runs as one implicit
	// transaction, so the lock is held until the numbers commit, and the
	// numbering statement takes its snapshot once the lock is held.
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended('postgram.events:' || $1, 0))`, ws)
	b.Queue(numberSQL, ws, s.cfg.NotifyChannel, EventChannelPrefix+ws)
	var n int64
	err := s.retryAborted(ctx, func() error {
		br := s.pool.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
		var ignored bool
		if err := br.QueryRow().Scan(&n, &ignored); err != nil {
			br.Close()
			return err
		}
		return br.Close()
	})
	if err == nil && n > 0 {
		s.eventSignal.Notify(ws)
	}
	return err
}

// numberSQL numbers a workspace's committed, unsequenced events ($1) after
// its highest seq and notifies the change feed ($2, $3); the caller holds
// the log's lock.
const numberSQL = `WITH base AS (
		SELECT coalesce(max(seq), 0) AS b FROM events WHERE workspace_id = $1 AND seq IS NOT NULL
	), todo AS MATERIALIZED (
		SELECT ctid AS ct, row_number() OVER (ORDER BY id) AS rn FROM events
		WHERE workspace_id = $1 AND seq IS NULL ORDER BY id LIMIT 10000
	), upd AS (
		UPDATE events e SET seq = base.b + todo.rn FROM todo, base
		WHERE e.ctid = todo.ct AND e.workspace_id = $1 RETURNING 1
	), c AS (SELECT count(*) AS n FROM upd)
	SELECT n, CASE WHEN n > 0 THEN pg_notify($2, $3) END IS NULL FROM c`

// EventsAfter implements driver.EventStorage. One round trip reads the
// log and asks whether events wait for their numbers (the numberer has
// not reached them yet, or their writer died): those are numbered and the
// log read again.
func (s *Store) EventsAfter(ctx context.Context, ws string, after int64, limit int) ([]driver.ChangeEvent, int64, error) {
	ctx = withWS(ctx, ws)
	if limit <= 0 {
		limit = 100
	}
	for try := 0; ; try++ {
		b := &pgx.Batch{}
		b.Queue(`SELECT EXISTS (SELECT 1 FROM events WHERE workspace_id = $1 AND seq IS NULL)`, ws)
		b.Queue(`SELECT seq, kind, entity_id, job_id, type, visibility, owner, role, client_id, key_id, data::text, created_at,
				(SELECT min(seq) FROM events WHERE workspace_id = $1 AND seq IS NOT NULL)
			FROM events WHERE workspace_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, ws, after, limit)
		br := s.pool.SendBatch(ctx, b)
		var pending bool
		if err := br.QueryRow().Scan(&pending); err != nil {
			br.Close()
			return nil, 0, fmt.Errorf("postgres: event log: %w", mapErr(err))
		}
		if pending && try == 0 {
			// Number what is pending first, waiting for the log's lock
			// if the numberer holds it: every write that returned before
			// this read is then numbered and read. Seqs become visible in
			// order, so a reader never skips an event.
			br.Close()
			if err := s.sequenceEvents(ctx, ws); err != nil {
				return nil, 0, fmt.Errorf("postgres: sequence events: %w", mapErr(err))
			}
			continue
		}
		rows, err := br.Query()
		if err != nil {
			br.Close()
			return nil, 0, fmt.Errorf("postgres: event log: %w", mapErr(err))
		}
		out, first, err := scanEvents(rows)
		br.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("postgres: event log: %w", mapErr(err))
		}
		if len(out) == 0 {
			if err := s.pool.QueryRow(ctx, `SELECT coalesce(min(seq), 0) FROM events WHERE workspace_id = $1 AND seq IS NOT NULL`, ws).Scan(&first); err != nil {
				return nil, 0, fmt.Errorf("postgres: event log: %w", mapErr(err))
			}
		}
		return out, first, nil
	}
}

func scanEvents(rows pgx.Rows) ([]driver.ChangeEvent, int64, error) {
	defer rows.Close()
	var out []driver.ChangeEvent
	var first int64
	for rows.Next() {
		var e driver.ChangeEvent
		var entity, job *uuid.UUID
		var typ, vis, role, data string
		var lo *int64
		if err := rows.Scan(&e.Seq, &e.Kind, &entity, &job, &typ, &vis, &e.Owner, &role, &e.ClientID, &e.KeyID,
			&data, &e.CreatedAt, &lo); err != nil {
			return nil, 0, err
		}
		if entity != nil {
			e.EntityID = *entity
		}
		if job != nil {
			e.JobID = *job
		}
		if lo != nil {
			first = *lo
		}
		e.Type, e.Visibility, e.Role, e.Data = driver.EntityType(typ), driver.Visibility(vis), driver.MemoryRole(role), []byte(data)
		out = append(out, e)
	}
	return out, first, rows.Err()
}

// LastEventSeq implements driver.EventStorage.
func (s *Store) LastEventSeq(ctx context.Context, ws string) (int64, error) {
	ctx = withWS(ctx, ws)
	if err := s.sequenceEvents(ctx, ws); err != nil {
		return 0, fmt.Errorf("postgres: sequence events: %w", mapErr(err))
	}
	var last *int64
	if err := s.pool.QueryRow(ctx, `SELECT max(seq) FROM events WHERE workspace_id = $1`, ws).Scan(&last); err != nil {
		return 0, fmt.Errorf("postgres: event log: %w", mapErr(err))
	}
	if last == nil {
		return 0, nil
	}
	return *last, nil
}

// PruneEvents implements driver.EventStorage.
func (s *Store) PruneEvents(ctx context.Context, ws string, keep int, olderThan time.Time) (int, error) {
	ctx = withWS(ctx, ws)
	if err := s.sequenceEvents(ctx, ws); err != nil {
		return 0, fmt.Errorf("postgres: sequence events: %w", mapErr(err))
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM events WHERE workspace_id = $1 AND (created_at < $2 OR seq <= coalesce(
			(SELECT seq FROM events WHERE workspace_id = $1 AND seq IS NOT NULL ORDER BY seq DESC OFFSET $3 LIMIT 1), 0))`, ws, olderThan, keep)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune events: %w", mapErr(err))
	}
	return int(tag.RowsAffected()), nil
}

// EventsSignal implements driver.EventStorage.
func (s *Store) EventsSignal(ws string) <-chan struct{} { return s.eventSignal.Wait(ws) }
