package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/postgram-go/postgram/driver"
)

// ListModels implements driver.ModelStorage.
func (s *Store) ListModels(ctx context.Context) ([]driver.ModelRecord, error) {
	rows, err := s.query(ctx, "SELECT id, provider, name, dimensions, is_active, created_at FROM embedding_models ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("sqlite: list models: %w", mapErr(err))
	}
	defer rows.Close()
	var out []driver.ModelRecord
	for rows.Next() {
		var m driver.ModelRecord
		var created int64
		if err := rows.Scan(&m.ID, &m.Provider, &m.Name, &m.Dimensions, &m.Active, &created); err != nil {
			return nil, fmt.Errorf("sqlite: list models: %w", err)
		}
		m.CreatedAt = fromMicros(created)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list models: %w", mapErr(err))
	}
	return out, nil
}

// ActivateModel implements driver.ModelStorage. Vectors of every model
// are kept (chunk_embeddings is keyed by model), so switching back to an
// earlier model finds its old vectors where chunks did not change.
func (s *Store) ActivateModel(ctx context.Context, m driver.ModelInfo) (int64, error) {
	var id int64
	err := s.write(ctx, func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, "UPDATE embedding_models SET is_active = 0 WHERE is_active"); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `INSERT INTO embedding_models (provider, name, dimensions, is_active, created_at)
			VALUES (?, ?, ?, 1, ?)
			ON CONFLICT (provider, name, dimensions) DO UPDATE SET is_active = 1
			RETURNING id`, m.Provider, m.Name, m.Dimensions, micros(time.Now())).Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: activate model: %w", mapErr(err))
	}
	s.mu.Lock()
	s.models[id] = m
	s.mu.Unlock()
	return id, nil
}

// QueueReembed implements driver.ModelStorage.
func (s *Store) QueueReembed(ctx context.Context, ws string, types []driver.EntityType) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE entities SET enrichment_status = 'pending', enrichment_attempts = 0, enrichment_error = '',
				enrichment_retry_at = NULL, enrichment_leased_until = NULL, enrichment_queued_at = ?1
			WHERE (?2 = '' OR workspace_id = ?2) AND (json_array_length(?3) = 0 OR type IN (SELECT value FROM json_each(?3)))`,
			micros(now()), ws, stringsJSON(types))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: queue re-embedding: %w", mapErr(err))
	}
	return int(n), nil
}
