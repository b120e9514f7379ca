package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/driver"
)

// CompleteExtraction implements driver.ExtractionStorage.
func (s *Store) CompleteExtraction(ctx context.Context, ws string, r driver.ExtractResult) (int, bool, error) {
	ctx = withWS(ctx, ws)
	written, ok := 0, false
	// The origin entity is locked before its edges (see the lock order in
	// tx.go), in NO KEY UPDATE mode: FOR UPDATE would block the foreign-key
	// checks of edges that other extractions insert towards it, and two
	// extractions linking each other's entities would deadlock.
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		written, ok = 0, false
		var gen int64
		err := tx.QueryRow(ctx, "SELECT chunk_generation FROM entities WHERE workspace_id = $1 AND id = $2 FOR NO KEY UPDATE",
			ws, r.EntityID).Scan(&gen)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if gen != r.Generation {
			_, err := tx.Exec(ctx, "UPDATE entities SET extraction_leased_until = NULL WHERE workspace_id = $1 AND id = $2", ws, r.EntityID)
			return err
		}
		notify := false
		for _, p := range r.Creates {
			if err := createTx(ctx, tx, ws, p.Entity, p.Chunks); err != nil {
				return err
			}
			notify = true
		}
		if len(r.Retract) > 0 {
			if _, err := tx.Exec(ctx, "DELETE FROM edges WHERE workspace_id = $1 AND origin_id = $2 AND source = ANY($3)",
				ws, r.EntityID, r.Retract); err != nil {
				return err
			}
		}
		out, err := upsertEdges(ctx, tx, ws, r.Edges)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE entities SET extraction_status = 'completed', extraction_attempts = 0,
				extraction_error = '', extraction_retry_at = NULL, extraction_leased_until = NULL, extraction_queued_at = NULL,
				extraction_provider = '', extraction_model = ''
			WHERE workspace_id = $1 AND id = $2`, ws, r.EntityID); err != nil {
			return err
		}
		if err := auditInsert(ctx, tx, ws, r.Audit); err != nil {
			return err
		}
		if notify {
			if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", s.cfg.NotifyChannel, ws); err != nil {
				return err
			}
		}
		written, ok = len(out), true
		return s.insertEventsTx(ctx, tx, ws, extractionEvents(r, len(out)))
	})
	if err != nil {
		return 0, false, fmt.Errorf("postgres: complete extraction: %w", mapErr(err))
	}
	if ok {
		s.eventsCommitted(ws)
	}
	return written, ok, nil
}

// QueueExtraction implements driver.ExtractionStorage.
func (s *Store) QueueExtraction(ctx context.Context, ws string, ids []uuid.UUID, o driver.ExtractOverride, cleanSources []string) (int, int, error) {
	ctx = withWS(ctx, ws)
	if len(ids) == 0 {
		return 0, 0, nil
	}
	var queued, deleted int64
	// The entities are locked before their edges (see the lock order in
	// tx.go).
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		queued, deleted = 0, 0
		if err := lockEntities(ctx, tx, ws, ids); err != nil {
			return err
		}
		if len(cleanSources) > 0 {
			tag, err := tx.Exec(ctx, "DELETE FROM edges WHERE workspace_id = $1 AND origin_id = ANY($2) AND source = ANY($3)",
				ws, ids, cleanSources)
			if err != nil {
				return err
			}
			deleted = tag.RowsAffected()
		}
		tag, err := tx.Exec(ctx, `UPDATE entities SET extraction_status = 'pending', extraction_attempts = 0, extraction_error = '',
				extraction_retry_at = NULL, extraction_queued_at = now(), extraction_provider = $3, extraction_model = $4
			WHERE workspace_id = $1 AND id = ANY($2)`, ws, ids, o.Provider, o.Model)
		if err != nil {
			return err
		}
		queued = tag.RowsAffected()
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", s.cfg.NotifyChannel, ws)
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("postgres: queue extraction: %w", mapErr(err))
	}
	return int(queued), int(deleted), nil
}

// nameKeySQL normalises a name as the library's name keys are: trimmed,
// inner whitespace collapsed, lower-cased.
const nameKeySQL = `lower(regexp_replace(btrim(%s), '\s+', ' ', 'g'))`

// FindByNames implements driver.ExtractionStorage. Session context is
// never a resolution target.
func (s *Store) FindByNames(ctx context.Context, ws string, keys []string) ([]driver.NameMatch, error) {
	ctx = withWS(ctx, ws)
	if len(keys) == 0 {
		return nil, nil
	}
	k := func(expr string) string { return fmt.Sprintf(nameKeySQL, expr) }
	rows, err := s.pool.Query(ctx, `
		SELECT n.key, e.id, e.type, e.created_at, n.exact
		FROM entities e CROSS JOIN LATERAL (
			SELECT `+k("e.content")+` AS key, true AS exact WHERE char_length(e.content) <= $3
			UNION ALL SELECT `+k("e.metadata->>'name'")+`, true WHERE jsonb_typeof(e.metadata->'name') = 'string'
			UNION ALL SELECT `+k("e.metadata->>'title'")+`, false WHERE jsonb_typeof(e.metadata->'title') = 'string'
			UNION ALL SELECT `+k("a")+`, false FROM jsonb_array_elements_text(
				CASE WHEN jsonb_typeof(e.metadata->'aliases') = 'array' THEN e.metadata->'aliases' ELSE '[]'::jsonb END) a
		) n
		WHERE e.workspace_id = $1 AND e.status <> 'archived' AND e.memory_role IS DISTINCT FROM 'session_context'
		  AND n.key = ANY($2)`, ws, keys, driver.MaxEntityNameLen)
	if err != nil {
		return nil, fmt.Errorf("postgres: find entities by name: %w", mapErr(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.NameMatch, error) {
		var m driver.NameMatch
		err := r.Scan(&m.Key, &m.EntityID, &m.Type, &m.CreatedAt, &m.Exact)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: find entities by name: %w", mapErr(err))
	}
	return out, nil
}

// extractionEvents are the change events of a completed extraction: its
// placeholders created, then the entity extracted.
func extractionEvents(r driver.ExtractResult, edges int) []driver.ChangeEvent {
	evs := make([]driver.ChangeEvent, 0, len(r.Creates)+1)
	for _, p := range r.Creates {
		evs = append(evs, driver.EntityChange(driver.EventEntityCreated, p.Entity))
	}
	return append(evs, driver.EntityRef(driver.EventEntityExtracted, r.EntityID, `{"edges":`+strconv.Itoa(edges)+`}`))
}
