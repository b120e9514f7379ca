package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
)

// metaExpr renders metadata key k (checked against postgram.MetaKeyRE, so
// it is safe to interpolate) as a text expression over alias e, in the
// form the expression indexes are built on.
func metaExpr(k string) (string, error) {
	if !driver.MetaKeyRE.MatchString(k) {
		return "", fmt.Errorf("metadata key %q: %w", k, driver.ErrInvalidArgument)
	}
	return "(e.metadata ->> '$." + k + "')", nil
}

// findSQL renders f and q as a condition over alias e.
func findSQL(f driver.EntityFilter, q driver.FindQuery, args *[]any) (string, error) {
	var b strings.Builder
	// A single type is an equality, so that the planner can walk an index
	// that leads with it in order (entities_type_context for a task list by
	// context) instead of sorting an IN list's rows.
	var one driver.EntityType
	if len(f.Types) == 1 {
		one, f.Types = f.Types[0], nil
	}
	b.WriteString(filterSQL(f, args))
	if one != "" {
		b.WriteString(" AND e.type = ?")
		*args = append(*args, string(one))
	}
	if q.ClientID != nil {
		b.WriteString(" AND e.client_id = ?")
		*args = append(*args, *q.ClientID)
	}
	for _, c := range q.Meta {
		x, err := metaExpr(c.Key)
		if err != nil {
			return "", err
		}
		var cond string
		switch c.Op {
		case driver.MetaMissing:
			cond = x + " IS NULL"
		case driver.MetaPresent:
			cond = x + " IS NOT NULL"
		case driver.MetaEq, driver.MetaLT, driver.MetaLE, driver.MetaGT, driver.MetaGE:
			cond = x + " " + string(c.Op) + " ?"
			*args = append(*args, c.Value)
		default:
			return "", fmt.Errorf("metadata operator %q: %w", c.Op, driver.ErrInvalidArgument)
		}
		if c.OrMissing {
			cond = "(" + cond + " OR " + x + " IS NULL)"
		}
		b.WriteString(" AND " + cond)
	}
	return b.String(), nil
}

// FindEntities implements driver.LifecycleStorage.
func (s *Store) FindEntities(ctx context.Context, ws string, f driver.EntityFilter, q driver.FindQuery, limit, offset int) ([]*driver.Entity, int, error) {
	args := []any{ws}
	where, err := findSQL(f, q, &args)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: find entities: %w", err)
	}
	order := "e.created_at DESC, e.id DESC"
	if q.Order == driver.OrderOldest {
		order = "e.created_at, e.id"
	}
	cargs := slices.Clone(args)
	args = append(args, limit, offset)
	// The page and the total are two queries: with count(*) OVER () SQLite
	// materializes and sorts every matching row (content included) instead
	// of walking an index in order and stopping at the page's end, which
	// made a task list by context 3x slower at 10,000 tasks.
	rows, err := s.query(ctx, `SELECT `+entityCols+` FROM entities e
		WHERE e.workspace_id = ? AND `+where+` ORDER BY `+order+` LIMIT ? OFFSET ?`, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: find entities: %w", mapErr(err))
	}
	defer rows.Close()
	var out []*driver.Entity
	for rows.Next() {
		e, err := scanEntity(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("sqlite: find entities: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("sqlite: find entities: %w", mapErr(err))
	}
	total := offset + len(out)
	// A page that is not full ends the result (unless it is past the end).
	if len(out) >= limit || (len(out) == 0 && offset > 0) {
		if err := s.queryRow(ctx, "SELECT count(*) FROM entities e WHERE e.workspace_id = ? AND "+where, cargs...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("sqlite: count entities: %w", mapErr(err))
		}
	}
	return out, total, nil
}

// SessionContextClients implements driver.LifecycleStorage.
func (s *Store) SessionContextClients(ctx context.Context, ws string) ([]string, error) {
	rows, err := s.query(ctx, `SELECT DISTINCT client_id FROM entities
		WHERE workspace_id = ? AND memory_role = 'session_context' AND status <> 'archived' ORDER BY client_id`, ws)
	if err != nil {
		return nil, fmt.Errorf("sqlite: session-context clients: %w", mapErr(err))
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, fmt.Errorf("sqlite: session-context clients: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: session-context clients: %w", mapErr(err))
	}
	return out, nil
}

// WriteBatch implements driver.LifecycleStorage.
func (s *Store) WriteBatch(ctx context.Context, ws string, ops []driver.BatchOp) error {
	if len(ops) == 0 {
		return nil
	}
	// Keyword index entries are computed before the write lock is taken.
	prepared := make([][]preparedChunk, len(ops))
	for i, op := range ops {
		if op.Chunks != nil {
			prepared[i] = prepareChunks(ws, op.Chunks)
		}
	}
	err := s.write(ctx, func(tx *wtx) error {
		var events []driver.ChangeEvent
		for i := range ops {
			op := &ops[i]
			var err error
			switch {
			case op.Create != nil:
				err = createTx(ctx, tx, ws, op.Create, prepared[i])
				events = append(events, driver.EntityChange(driver.EventEntityCreated, op.Create))
			case op.Update != nil:
				err = updateTx(ctx, tx, ws, op.Update, op.Expected, op.Chunks != nil, prepared[i])
				events = append(events, driver.EntityChange(driver.ChangeKindOf(op.Update), op.Update))
			case op.Edge != nil:
				err = edgeTx(ctx, tx, ws, op.Edge)
			case op.SyncState != nil:
				err = syncStateTx(ctx, tx, ws, op.SyncState)
			case op.Retract != nil:
				_, err = tx.ExecContext(ctx, `DELETE FROM edges WHERE workspace_id = ? AND origin_id = ?
					AND source IN (SELECT value FROM json_each(?))`, ws, op.Retract.Origin.String(), stringsJSON(op.Retract.Sources))
			default:
				err = fmt.Errorf("batch op %d sets nothing: %w", i, driver.ErrInvalidArgument)
			}
			if err != nil {
				return err
			}
			if err := auditInsert(ctx, tx, ws, op.Audit); err != nil {
				return err
			}
		}
		return insertEvents(ctx, tx, ws, events)
	})
	if err != nil {
		var ce *driver.ConflictError
		if errors.As(err, &ce) || errors.Is(err, driver.ErrNotFound) || errors.Is(err, driver.ErrInvalidArgument) {
			return err
		}
		if isUniqueViolation(err) {
			return fmt.Errorf("sqlite: write batch: %w: a row already exists", driver.ErrConflict)
		}
		return fmt.Errorf("sqlite: write batch: %w", mapErr(err))
	}
	s.eventSignal.Notify(ws)
	return nil
}

func createTx(ctx context.Context, tx *wtx, ws string, e *driver.Entity, chunks []preparedChunk) error {
	meta, err := metadataJSON(e.Metadata)
	if err != nil {
		return err
	}
	var queuedAt any
	if e.EnrichmentStatus == driver.StagePending {
		queuedAt = micros(e.CreatedAt)
	}
	var rid int64
	err = tx.QueryRowContext(ctx, `INSERT INTO entities (workspace_id, id, type, content, visibility, owner, status, tags, source,
			metadata, client_id, version, enrichment_status, enrichment_queued_at, extraction_status, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING rid`,
		ws, e.ID.String(), e.Type, e.Content, e.Visibility, e.Owner, e.Status, stringsJSON(e.Tags), e.Source,
		meta, e.ClientID, e.Version, e.EnrichmentStatus, queuedAt, e.ExtractionStatus, micros(e.CreatedAt), micros(e.UpdatedAt)).Scan(&rid)
	if err != nil {
		return err
	}
	if err := putHead(ctx, tx, rid, e); err != nil {
		return err
	}
	return insertChunks(ctx, tx, ws, e.ID, rid, chunks)
}

func updateTx(ctx context.Context, tx *wtx, ws string, e *driver.Entity, expected int64, rechunk bool, chunks []preparedChunk) error {
	meta, err := metadataJSON(e.Metadata)
	if err != nil {
		return err
	}
	var rid int64
	err = tx.QueryRowContext(ctx, `
		UPDATE entities SET type = ?3, content = ?4, visibility = ?5, owner = ?6, status = ?7, tags = ?8,
			source = ?9, metadata = ?10, version = ?11, updated_at = ?12, extraction_status = ?13,
			chunk_generation = chunk_generation + CASE WHEN ?14 THEN 1 ELSE 0 END,
			enrichment_status = CASE WHEN ?14 THEN ?15 ELSE enrichment_status END,
			enrichment_attempts = CASE WHEN ?14 THEN 0 ELSE enrichment_attempts END,
			enrichment_error = CASE WHEN ?14 THEN '' ELSE enrichment_error END,
			enrichment_queued_at = CASE WHEN ?14 THEN ?12 ELSE enrichment_queued_at END,
			enrichment_retry_at = CASE WHEN ?14 THEN NULL ELSE enrichment_retry_at END,
			enrichment_leased_until = CASE WHEN ?14 THEN NULL ELSE enrichment_leased_until END,
				extraction_attempts = CASE WHEN ?14 THEN 0 ELSE extraction_attempts END,
				extraction_error = CASE WHEN ?14 THEN '' ELSE extraction_error END,
				extraction_retry_at = CASE WHEN ?14 THEN NULL ELSE extraction_retry_at END
		WHERE workspace_id = ?1 AND id = ?2 AND version = ?16
		RETURNING rid`,
		ws, e.ID.String(), e.Type, e.Content, e.Visibility, e.Owner, e.Status, stringsJSON(e.Tags),
		e.Source, meta, e.Version, micros(e.UpdatedAt), e.ExtractionStatus, rechunk, e.EnrichmentStatus, expected).Scan(&rid)
	if errors.Is(err, sql.ErrNoRows) {
		cur, err := scanEntity(tx.QueryRowContext(ctx, "SELECT "+entityCols+" FROM entities e WHERE e.workspace_id = ? AND e.id = ?", ws, e.ID.String()))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("entity %s: %w", e.ID, driver.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return &driver.ConflictError{ID: e.ID.String(), Expected: expected, Current: cur}
	}
	if err != nil {
		return err
	}
	if err := putHead(ctx, tx, rid, e); err != nil {
		return err
	}
	if !rechunk {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM chunks WHERE workspace_id = ? AND entity_id = ?", ws, e.ID.String()); err != nil {
		return err
	}
	return insertChunks(ctx, tx, ws, e.ID, rid, chunks)
}

func edgeTx(ctx context.Context, tx *wtx, ws string, ed *driver.BatchEdge) error {
	meta, err := metadataJSON(ed.Metadata)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO edges (workspace_id, id, source_id, target_id, relation, confidence, source, metadata, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?9)
		ON CONFLICT (workspace_id, source_id, target_id, relation)
		DO UPDATE SET confidence = excluded.confidence, source = excluded.source, metadata = excluded.metadata, updated_at = excluded.updated_at`,
		ws, ed.ID.String(), ed.SourceID.String(), ed.TargetID.String(), ed.Relation, ed.Confidence, ed.Source, meta, micros(ed.CreatedAt))
	return err
}

func syncStateTx(ctx context.Context, tx *wtx, ws string, st *driver.SyncFileState) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO sync_files (workspace_id, repo, path, sha, entity_id, sync_status, last_synced)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (workspace_id, repo, path) DO UPDATE SET sha = excluded.sha, entity_id = excluded.entity_id,
			sync_status = excluded.sync_status, last_synced = excluded.last_synced`,
		ws, st.Repo, st.Path, st.SHA, st.EntityID.String(), st.Status, micros(st.LastSynced))
	return err
}

// SyncStates implements driver.LifecycleStorage.
func (s *Store) SyncStates(ctx context.Context, ws, repo string, paths []string, f *driver.EntityFilter) ([]driver.SyncFileState, error) {
	var list any // NULL: every path
	if paths != nil {
		list = stringsJSON(paths)
	}
	args := []any{ws, repo, list, list}
	q := `SELECT path, sha, entity_id, sync_status, last_synced FROM sync_files
		WHERE workspace_id = ? AND repo = ? AND (? IS NULL OR path IN (SELECT value FROM json_each(?)))`
	if f != nil {
		args = append(args, ws)
		q += ` AND entity_id IN (SELECT e.id FROM entities e WHERE e.workspace_id = ? AND ` + filterSQL(*f, &args) + `)`
	}
	rows, err := s.query(ctx, q+` ORDER BY path`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: sync states: %w", mapErr(err))
	}
	defer rows.Close()
	var out []driver.SyncFileState
	for rows.Next() {
		st := driver.SyncFileState{Repo: repo}
		var id string
		var at int64
		if err := rows.Scan(&st.Path, &st.SHA, &id, &st.Status, &at); err != nil {
			return nil, fmt.Errorf("sqlite: sync states: %w", err)
		}
		if st.EntityID, err = uuid.Parse(id); err != nil {
			return nil, fmt.Errorf("sqlite: sync states: entity id %q: %w", id, err)
		}
		st.LastSynced = fromMicros(at)
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: sync states: %w", mapErr(err))
	}
	return out, nil
}

// SyncRepos implements driver.LifecycleStorage.
func (s *Store) SyncRepos(ctx context.Context, ws string, f *driver.EntityFilter) ([]driver.SyncRepo, error) {
	args := []any{ws}
	where := "1"
	if f != nil {
		where = filterSQL(*f, &args)
	}
	rows, err := s.query(ctx, `SELECT s.repo, count(*) FILTER (WHERE s.sync_status = 'synced'),
			count(*) FILTER (WHERE s.sync_status = 'deleted'), max(s.last_synced)
		FROM sync_files s JOIN entities e ON e.workspace_id = s.workspace_id AND e.id = s.entity_id
		WHERE s.workspace_id = ? AND `+where+` GROUP BY s.repo ORDER BY s.repo`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: sync repositories: %w", mapErr(err))
	}
	defer rows.Close()
	var out []driver.SyncRepo
	for rows.Next() {
		var r driver.SyncRepo
		var last int64
		if err := rows.Scan(&r.Repo, &r.Synced, &r.Deleted, &last); err != nil {
			return nil, fmt.Errorf("sqlite: sync repositories: %w", err)
		}
		r.LastSynced = fromMicros(last)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: sync repositories: %w", mapErr(err))
	}
	return out, nil
}
