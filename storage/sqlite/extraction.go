package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
)

// CompleteExtraction implements driver.ExtractionStorage.
func (s *Store) CompleteExtraction(ctx context.Context, ws string, r driver.ExtractResult) (int, bool, error) {
	prepared := make([][]preparedChunk, len(r.Creates))
	for i, p := range r.Creates {
		prepared[i] = prepareChunks(ws, p.Chunks)
	}
	written, ok := 0, false
	err := s.write(ctx, func(tx *wtx) error {
		var gen int64
		err := tx.QueryRowContext(ctx, "SELECT chunk_generation FROM entities WHERE workspace_id = ? AND id = ?",
			ws, r.EntityID.String()).Scan(&gen)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if gen != r.Generation {
			_, err := tx.ExecContext(ctx, "UPDATE entities SET extraction_leased_until = NULL WHERE workspace_id = ? AND id = ?",
				ws, r.EntityID.String())
			return err
		}
		for i, p := range r.Creates {
			if err := createTx(ctx, tx, ws, p.Entity, prepared[i]); err != nil {
				return err
			}
		}
		if len(r.Retract) > 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM edges WHERE workspace_id = ? AND origin_id = ?
				AND source IN (SELECT value FROM json_each(?))`, ws, r.EntityID.String(), stringsJSON(r.Retract)); err != nil {
				return err
			}
		}
		out, err := upsertEdges(ctx, tx, ws, r.Edges)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE entities SET extraction_status = 'completed', extraction_attempts = 0,
				extraction_error = '', extraction_retry_at = NULL, extraction_leased_until = NULL, extraction_queued_at = NULL,
				extraction_provider = '', extraction_model = ''
			WHERE workspace_id = ? AND id = ?`, ws, r.EntityID.String()); err != nil {
			return err
		}
		if err := auditInsert(ctx, tx, ws, r.Audit); err != nil {
			return err
		}
		written, ok = len(out), true
		return insertEvents(ctx, tx, ws, extractionEvents(r, len(out)))
	})
	if err != nil {
		return 0, false, fmt.Errorf("sqlite: complete extraction: %w", mapErr(err))
	}
	if ok {
		s.eventSignal.Notify(ws)
	}
	return written, ok, nil
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

// QueueExtraction implements driver.ExtractionStorage.
func (s *Store) QueueExtraction(ctx context.Context, ws string, ids []uuid.UUID, o driver.ExtractOverride, cleanSources []string) (int, int, error) {
	if len(ids) == 0 {
		return 0, 0, nil
	}
	var queued, deleted int64
	err := s.write(ctx, func(tx *wtx) error {
		list := idsJSON(ids)
		if len(cleanSources) > 0 {
			res, err := tx.ExecContext(ctx, `DELETE FROM edges WHERE workspace_id = ?
				AND origin_id IN (SELECT value FROM json_each(?)) AND source IN (SELECT value FROM json_each(?))`,
				ws, list, stringsJSON(cleanSources))
			if err != nil {
				return err
			}
			if deleted, err = res.RowsAffected(); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE entities SET extraction_status = 'pending', extraction_attempts = 0, extraction_error = '',
				extraction_retry_at = NULL, extraction_queued_at = ?, extraction_provider = ?, extraction_model = ?
			WHERE workspace_id = ? AND id IN (SELECT value FROM json_each(?))`,
			micros(now()), o.Provider, o.Model, ws, list)
		if err != nil {
			return err
		}
		queued, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("sqlite: queue extraction: %w", mapErr(err))
	}
	return int(queued), int(deleted), nil
}

// FindByNames implements driver.ExtractionStorage. SQLite's lower() only
// folds ASCII, so the candidate rows are narrowed in SQL by length and
// compared in Go with the library's own normalisation.
func (s *Store) FindByNames(ctx context.Context, ws string, keys []string) ([]driver.NameMatch, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	rows, err := s.query(ctx, `
		SELECT e.id, e.type, e.created_at, n.val, n.exact
		FROM entities e JOIN (
			SELECT rid, content AS val, 1 AS exact FROM entities
				WHERE workspace_id = ?1 AND length(content) <= ?2
			UNION ALL SELECT rid, metadata ->> '$.name', 1 FROM entities
				WHERE workspace_id = ?1 AND json_type(metadata, '$.name') = 'text'
			UNION ALL SELECT rid, metadata ->> '$.title', 0 FROM entities
				WHERE workspace_id = ?1 AND json_type(metadata, '$.title') = 'text'
			UNION ALL SELECT x.rid, a.value, 0 FROM entities x, json_each(x.metadata, '$.aliases') a
				WHERE x.workspace_id = ?1 AND json_type(x.metadata, '$.aliases') = 'array' AND a.type = 'text'
		) n ON n.rid = e.rid
		WHERE e.status <> 'archived' AND (e.memory_role IS NULL OR e.memory_role <> 'session_context')`,
		ws, driver.MaxEntityNameLen)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find entities by name: %w", mapErr(err))
	}
	defer rows.Close()
	var out []driver.NameMatch
	for rows.Next() {
		var id, typ, val string
		var created int64
		var exact bool
		if err := rows.Scan(&id, &typ, &created, &val, &exact); err != nil {
			return nil, fmt.Errorf("sqlite: find entities by name: %w", err)
		}
		k := nameKey(val)
		if !want[k] {
			continue
		}
		eid, err := uuid.Parse(id)
		if err != nil {
			return nil, fmt.Errorf("sqlite: find entities by name: %w", err)
		}
		out = append(out, driver.NameMatch{Key: k, EntityID: eid, Type: driver.EntityType(typ),
			CreatedAt: fromMicros(created), Exact: exact})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: find entities by name: %w", mapErr(err))
	}
	return out, nil
}

// nameKey is the library's name normalisation: trimmed, inner whitespace
// collapsed, lower-cased.
func nameKey(s string) string {
	return strings.ToLower(strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " "))
}
