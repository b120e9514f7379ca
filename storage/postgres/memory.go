package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/rank"
)

// metaExpr renders metadata key k (checked against postgram.MetaKeyRE, so
// it is safe to interpolate) as a text expression over alias e. A
// top-level key uses the ->> form the expression indexes are built on.
func metaExpr(k string) (string, error) {
	if !driver.MetaKeyRE.MatchString(k) {
		return "", fmt.Errorf("metadata key %q: %w", k, driver.ErrInvalidArgument)
	}
	if top, sub, ok := strings.Cut(k, "."); ok {
		return "(e.metadata #>> '{" + top + "," + sub + "}')", nil
	}
	return "(e.metadata ->> '" + k + "')", nil
}

// findSQL renders f and q as a condition over alias e.
func findSQL(f driver.EntityFilter, q driver.FindQuery, args *[]any) (string, error) {
	var b strings.Builder
	// A single type is an equality: with "type = ANY(...)" the planner
	// cannot use the order of an index past the type column, and a task
	// list by context would scan entities_created instead of
	// entities_type_context (10x slower at 10,000 tasks).
	var one driver.EntityType
	if len(f.Types) == 1 {
		one, f.Types = f.Types[0], nil
	}
	b.WriteString(filterSQL(f, args))
	arg := func(v any) string {
		*args = append(*args, v)
		return "$" + strconv.Itoa(len(*args))
	}
	if one != "" {
		b.WriteString(" AND e.type = " + arg(string(one)))
	}
	if q.ClientID != nil {
		b.WriteString(" AND e.client_id = " + arg(*q.ClientID))
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
		case driver.MetaEq:
			cond = x + " = " + arg(c.Value)
		case driver.MetaLT, driver.MetaLE, driver.MetaGT, driver.MetaGE:
			// Byte order, as on every backend.
			cond = x + " " + string(c.Op) + " " + arg(c.Value) + " COLLATE \"C\""
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
	ctx = withWS(ctx, ws)
	args := []any{ws}
	where, err := findSQL(f, q, &args)
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: find entities: %w", err)
	}
	order := "e.created_at DESC, e.id DESC"
	if q.Order == driver.OrderOldest {
		order = "e.created_at, e.id"
	}
	args = append(args, limit, offset)
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT %s, count(*) OVER () FROM entities e WHERE e.workspace_id = $1 AND %s
		ORDER BY %s LIMIT $%d OFFSET $%d`, entityCols, where, order, len(args)-1, len(args)), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: find entities: %w", mapErr(err))
	}
	defer rows.Close()
	var out []*driver.Entity
	total := 0
	for rows.Next() {
		e, err := scanEntity(rows, &total)
		if err != nil {
			return nil, 0, fmt.Errorf("postgres: find entities: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("postgres: find entities: %w", mapErr(err))
	}
	if len(out) == 0 && offset > 0 {
		cargs := []any{ws}
		cwhere, _ := findSQL(f, q, &cargs)
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM entities e WHERE e.workspace_id = $1 AND "+cwhere, cargs...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("postgres: count entities: %w", mapErr(err))
		}
	}
	return out, total, nil
}

// SessionContextClients implements driver.LifecycleStorage.
func (s *Store) SessionContextClients(ctx context.Context, ws string) ([]string, error) {
	ctx = withWS(ctx, ws)
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT client_id FROM entities
		WHERE workspace_id = $1 AND memory_role = 'session_context' AND status <> 'archived' ORDER BY client_id`, ws)
	if err != nil {
		return nil, fmt.Errorf("postgres: session-context clients: %w", mapErr(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: session-context clients: %w", mapErr(err))
	}
	return out, nil
}

// WriteBatch implements driver.LifecycleStorage.
func (s *Store) WriteBatch(ctx context.Context, ws string, ops []driver.BatchOp) error {
	ctx = withWS(ctx, ws)
	if len(ops) == 0 {
		return nil
	}
	// The entities the batch updates or retracts edges from are locked
	// first, in id order, whatever the order of the ops (see the lock
	// order in tx.go).
	var lock []uuid.UUID
	for i := range ops {
		switch op := &ops[i]; {
		case op.Update != nil:
			lock = append(lock, op.Update.ID)
		case op.Retract != nil:
			lock = append(lock, op.Retract.Origin)
		}
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockEntities(ctx, tx, ws, lock); err != nil {
			return err
		}
		notify := false
		var events []driver.ChangeEvent
		for i := range ops {
			op := &ops[i]
			var err error
			switch {
			case op.Create != nil:
				err = createTx(ctx, tx, ws, op.Create, op.Chunks)
				notify = notify || op.Create.EnrichmentStatus == driver.StagePending
				events = append(events, driver.EntityChange(driver.EventEntityCreated, op.Create))
			case op.Update != nil:
				err = updateTx(ctx, tx, ws, op.Update, op.Expected, op.Chunks)
				notify = notify || (op.Chunks != nil && op.Update.EnrichmentStatus == driver.StagePending)
				events = append(events, driver.EntityChange(driver.ChangeKindOf(op.Update), op.Update))
			case op.Edge != nil:
				err = edgeTx(ctx, tx, ws, op.Edge)
			case op.SyncState != nil:
				err = syncStateTx(ctx, tx, ws, op.SyncState)
			case op.Retract != nil:
				_, err = tx.Exec(ctx, "DELETE FROM edges WHERE workspace_id = $1 AND origin_id = $2 AND source = ANY($3)",
					ws, op.Retract.Origin, op.Retract.Sources)
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
		if notify {
			if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", s.cfg.NotifyChannel, ws); err != nil {
				return err
			}
		}
		return s.insertEventsTx(ctx, tx, ws, events)
	})
	if err != nil {
		var ce *driver.ConflictError
		if errors.As(err, &ce) || errors.Is(err, driver.ErrNotFound) || errors.Is(err, driver.ErrInvalidArgument) {
			return err
		}
		if isUniqueViolation(err) {
			return fmt.Errorf("postgres: write batch: %w: a row already exists", driver.ErrConflict)
		}
		return fmt.Errorf("postgres: write batch: %w", mapErr(err))
	}
	s.eventsCommitted(ws)
	return nil
}

func insertChunksTx(ctx context.Context, tx pgx.Tx, ws string, id uuid.UUID, chunks []driver.ChunkInput) error {
	if len(chunks) == 0 {
		return nil
	}
	ids, idx, content, starts, ends := chunkArrays(chunks)
	_, err := tx.Exec(ctx, `
		INSERT INTO chunks (workspace_id, id, entity_id, chunk_index, content, start_offset, end_offset)
		SELECT $1, u.id, $2, u.idx, u.content, u.s, u.e
		FROM unnest($3::uuid[], $4::int[], $5::text[], $6::int[], $7::int[]) AS u(id, idx, content, s, e)`,
		ws, id, ids, idx, content, starts, ends)
	return err
}

func createTx(ctx context.Context, tx pgx.Tx, ws string, e *driver.Entity, chunks []driver.ChunkInput) error {
	meta, err := metadataJSON(e.Metadata)
	if err != nil {
		return err
	}
	var queuedAt *time.Time
	if e.EnrichmentStatus == driver.StagePending {
		queuedAt = &e.CreatedAt
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO entities (workspace_id, id, type, content, visibility, owner, status, tags, source, metadata,
			client_id, version, enrichment_status, enrichment_queued_at, extraction_status, created_at, updated_at, head)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, to_tsvector('simple', $18))`,
		ws, e.ID, e.Type, e.Content, e.Visibility, e.Owner, e.Status, tagsOrEmpty(e.Tags), e.Source, meta,
		e.ClientID, e.Version, e.EnrichmentStatus, queuedAt, e.ExtractionStatus, e.CreatedAt, e.UpdatedAt,
		rank.Head(e.Content, e.Metadata)); err != nil {
		return err
	}
	return insertChunksTx(ctx, tx, ws, e.ID, chunks)
}

func updateTx(ctx context.Context, tx pgx.Tx, ws string, e *driver.Entity, expected int64, chunks []driver.ChunkInput) error {
	meta, err := metadataJSON(e.Metadata)
	if err != nil {
		return err
	}
	rechunk := chunks != nil
	tag, err := tx.Exec(ctx, `
		UPDATE entities SET type = $4, content = $5, visibility = $6, owner = $7, status = $8, tags = $9,
			source = $10, metadata = $11, version = $12, updated_at = $13, extraction_status = $14,
			chunk_generation = chunk_generation + CASE WHEN $15 THEN 1 ELSE 0 END,
			enrichment_status = CASE WHEN $15 THEN $16 ELSE enrichment_status END,
			enrichment_attempts = CASE WHEN $15 THEN 0 ELSE enrichment_attempts END,
			enrichment_error = CASE WHEN $15 THEN '' ELSE enrichment_error END,
			enrichment_queued_at = CASE WHEN $15 THEN $13 ELSE enrichment_queued_at END,
			enrichment_retry_at = CASE WHEN $15 THEN NULL ELSE enrichment_retry_at END,
			enrichment_leased_until = CASE WHEN $15 THEN NULL ELSE enrichment_leased_until END,
			extraction_attempts = CASE WHEN $15 THEN 0 ELSE extraction_attempts END,
			extraction_error = CASE WHEN $15 THEN '' ELSE extraction_error END,
			extraction_retry_at = CASE WHEN $15 THEN NULL ELSE extraction_retry_at END,
			head = to_tsvector('simple', $17)
		WHERE workspace_id = $1 AND id = $2 AND version = $3`,
		ws, e.ID, expected, e.Type, e.Content, e.Visibility, e.Owner, e.Status, tagsOrEmpty(e.Tags),
		e.Source, meta, e.Version, e.UpdatedAt, e.ExtractionStatus, rechunk, e.EnrichmentStatus,
		rank.Head(e.Content, e.Metadata))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		cur, err := scanEntity(tx.QueryRow(ctx, "SELECT "+entityCols+" FROM entities e WHERE e.workspace_id = $1 AND e.id = $2", ws, e.ID))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("entity %s: %w", e.ID, driver.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return &driver.ConflictError{ID: e.ID.String(), Expected: expected, Current: cur}
	}
	if !rechunk {
		return nil
	}
	if _, err := tx.Exec(ctx, "DELETE FROM chunks WHERE workspace_id = $1 AND entity_id = $2", ws, e.ID); err != nil {
		return err
	}
	return insertChunksTx(ctx, tx, ws, e.ID, chunks)
}

func edgeTx(ctx context.Context, tx pgx.Tx, ws string, ed *driver.BatchEdge) error {
	meta, err := metadataJSON(ed.Metadata)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO edges (workspace_id, id, source_id, target_id, relation, confidence, source, metadata, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
		ON CONFLICT (workspace_id, source_id, target_id, relation)
		DO UPDATE SET confidence = EXCLUDED.confidence, source = EXCLUDED.source, metadata = EXCLUDED.metadata, updated_at = EXCLUDED.updated_at`,
		ws, ed.ID, ed.SourceID, ed.TargetID, ed.Relation, ed.Confidence, ed.Source, meta, ed.CreatedAt)
	return err
}

func syncStateTx(ctx context.Context, tx pgx.Tx, ws string, st *driver.SyncFileState) error {
	_, err := tx.Exec(ctx, `INSERT INTO sync_files (workspace_id, repo, path, sha, entity_id, sync_status, last_synced)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (workspace_id, repo, path) DO UPDATE SET sha = EXCLUDED.sha, entity_id = EXCLUDED.entity_id,
			sync_status = EXCLUDED.sync_status, last_synced = EXCLUDED.last_synced`,
		ws, st.Repo, st.Path, st.SHA, st.EntityID, st.Status, st.LastSynced)
	return err
}

// SyncStates implements driver.LifecycleStorage.
func (s *Store) SyncStates(ctx context.Context, ws, repo string, paths []string, f *driver.EntityFilter) ([]driver.SyncFileState, error) {
	ctx = withWS(ctx, ws)
	args := []any{ws, repo, paths}
	q := `SELECT path, sha, entity_id, sync_status, last_synced FROM sync_files s
		WHERE s.workspace_id = $1 AND s.repo = $2 AND ($3::text[] IS NULL OR s.path = ANY($3))`
	if f != nil {
		q += ` AND EXISTS (SELECT 1 FROM entities e WHERE e.workspace_id = $1 AND e.id = s.entity_id AND ` + filterSQL(*f, &args) + `)`
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY s.path COLLATE "C"`, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: sync states: %w", mapErr(err))
	}
	defer rows.Close()
	var out []driver.SyncFileState
	for rows.Next() {
		st := driver.SyncFileState{Repo: repo}
		if err := rows.Scan(&st.Path, &st.SHA, &st.EntityID, &st.Status, &st.LastSynced); err != nil {
			return nil, fmt.Errorf("postgres: sync states: %w", err)
		}
		st.LastSynced = st.LastSynced.UTC()
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: sync states: %w", mapErr(err))
	}
	return out, nil
}

// SyncRepos implements driver.LifecycleStorage.
func (s *Store) SyncRepos(ctx context.Context, ws string, f *driver.EntityFilter) ([]driver.SyncRepo, error) {
	ctx = withWS(ctx, ws)
	args := []any{ws}
	where := "TRUE"
	if f != nil {
		where = filterSQL(*f, &args)
	}
	rows, err := s.pool.Query(ctx, `SELECT s.repo, count(*) FILTER (WHERE s.sync_status = 'synced'),
			count(*) FILTER (WHERE s.sync_status = 'deleted'), max(s.last_synced)
		FROM sync_files s JOIN entities e ON e.workspace_id = s.workspace_id AND e.id = s.entity_id
		WHERE s.workspace_id = $1 AND `+where+` GROUP BY s.repo ORDER BY s.repo`, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: sync repositories: %w", mapErr(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.SyncRepo, error) {
		var x driver.SyncRepo
		err := r.Scan(&x.Repo, &x.Synced, &x.Deleted, &x.LastSynced)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: sync repositories: %w", mapErr(err))
	}
	return out, nil
}
