package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/postgram-go/postgram/driver"
)

// ListModels implements driver.ModelStorage.
func (s *Store) ListModels(ctx context.Context) ([]driver.ModelRecord, error) {
	ctx = storeWide(ctx) // no workspace-scoped table
	rows, err := s.pool.Query(ctx, "SELECT id, provider, name, dimensions, is_active, created_at FROM embedding_models ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("postgres: list models: %w", mapErr(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.ModelRecord, error) {
		var m driver.ModelRecord
		err := r.Scan(&m.ID, &m.Provider, &m.Name, &m.Dimensions, &m.Active, &m.CreatedAt)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list models: %w", mapErr(err))
	}
	return out, nil
}

// ActivateModel implements driver.ModelStorage. The vector index of the
// new model is built in the same transaction (on an empty partial index
// this is instant; its rows arrive as the worker re-embeds).
func (s *Store) ActivateModel(ctx context.Context, m driver.ModelInfo) (int64, error) {
	ctx = storeWide(ctx) // no workspace-scoped table
	var id int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('postgram_embedding_models'))"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE embedding_models SET is_active = false WHERE is_active"); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO embedding_models (provider, name, dimensions, is_active)
			VALUES ($1, $2, $3, true)
			ON CONFLICT (provider, name, dimensions) DO UPDATE SET is_active = true
			RETURNING id`, m.Provider, m.Name, m.Dimensions).Scan(&id); err != nil {
			return err
		}
		return s.createVectorIndex(ctx, tx, id, m.Dimensions)
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: activate model: %w", mapErr(err))
	}
	s.mu.Lock()
	s.models[id] = m
	s.mu.Unlock()
	return id, nil
}

// QueueReembed implements driver.ModelStorage.
func (s *Store) QueueReembed(ctx context.Context, ws string, types []driver.EntityType) (int, error) {
	ctx = withWS(ctx, ws)
	ts := make([]string, len(types))
	for i, t := range types {
		ts[i] = string(t)
	}
	var n int64
	// The entities are updated in (workspace, id) order (see the lock order
	// in tx.go). Every workspace's (ws ""): through the owner, whom
	// row-level security does not restrict.
	run := s.inTx
	if ws == "" {
		run = s.inOwnerTx
	}
	err := run(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE entities e SET enrichment_status = 'pending', enrichment_attempts = 0, enrichment_error = '',
				enrichment_retry_at = NULL, enrichment_leased_until = NULL, enrichment_queued_at = now()
			FROM (
				SELECT workspace_id, id FROM entities
				WHERE ($1 = '' OR workspace_id = $1) AND (cardinality($2::text[]) = 0 OR type = ANY($2))
				ORDER BY workspace_id, id FOR NO KEY UPDATE
			) q
			WHERE e.workspace_id = q.workspace_id AND e.id = q.id`, ws, ts)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		if ws == "" {
			return nil
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", s.cfg.NotifyChannel, ws)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: queue re-embedding: %w", mapErr(err))
	}
	return int(n), nil
}
