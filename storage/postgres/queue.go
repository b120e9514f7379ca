package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/postgram-go/postgram/driver"
)

// ClaimWork implements driver.StageQueue. Rows are leased with FOR NO KEY
// UPDATE SKIP LOCKED, so concurrent workers in any number of processes
// never claim the same entity (nor wait for a write to one); a lease that
// expires (a crashed worker) makes the entity claimable again. The column
// names come from driver.Queue.Column, never from input.
func (s *Store) ClaimWork(ctx context.Context, ws string, c driver.WorkClaim) ([]driver.Lease, error) {
	ctx = withWS(ctx, ws)
	q := c.Queue
	rows, err := s.pool.Query(ctx, claimWorkSQL(q, c.AfterEmbedding), ws, c.Max, c.MaxAttempts, c.Lease.Seconds())
	if err != nil {
		return nil, fmt.Errorf("postgres: claim %s work: %w", q, mapErr(err))
	}
	leases, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Lease, error) {
		var l driver.Lease
		err := r.Scan(&l.EntityID, &l.Generation, &l.Attempts, &l.Override.Provider, &l.Override.Model)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: claim %s work: %w", q, mapErr(err))
	}
	return leases, nil
}

// claimWorkSQL is ClaimWork's statement for queue q ($1 workspace, $2
// most entities, $3 max attempts, $4 lease seconds): the oldest work
// first, in the order the queue's index holds (migration 019), so a claim
// reads a few index entries however long the queue.
func claimWorkSQL(q driver.Queue, afterEmbedding bool) string {
	after, override := "", ", '', ''"
	if afterEmbedding {
		after = "\n\t\t\t  AND enrichment_status = 'completed'"
	}
	if q == driver.QueueExtraction {
		override = ", e.extraction_provider, e.extraction_model"
	}
	return `
		UPDATE entities e SET ` + q.Column("leased_until") + ` = now() + make_interval(secs => $4)
		FROM (
			SELECT workspace_id, id FROM entities
			WHERE workspace_id = $1
			  AND (` + q.Column("status") + ` = 'pending' OR (` + q.Column("status") + ` = 'failed' AND ` + q.Column("attempts") + ` < $3))
			  AND (` + q.Column("retry_at") + ` IS NULL OR ` + q.Column("retry_at") + ` <= now())
			  AND (` + q.Column("leased_until") + ` IS NULL OR ` + q.Column("leased_until") + ` < now())` + after + `
			ORDER BY ` + q.Column("queued_at") + ` NULLS FIRST, id
			LIMIT $2
			FOR NO KEY UPDATE SKIP LOCKED
		) q
		WHERE e.workspace_id = q.workspace_id AND e.id = q.id
		RETURNING e.id, e.chunk_generation, e.` + q.Column("attempts") + override
}

// ChunksToEmbed implements driver.Storage.
func (s *Store) ChunksToEmbed(ctx context.Context, ws string, modelID int64, ids []uuid.UUID) (map[uuid.UUID][]driver.ChunkInput, error) {
	ctx = withWS(ctx, ws)
	out := make(map[uuid.UUID][]driver.ChunkInput, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	crows, err := s.pool.Query(ctx, `SELECT entity_id, id, chunk_index, content, start_offset, end_offset FROM chunks
		WHERE workspace_id = $1 AND entity_id = ANY($2) AND (embedding IS NULL OR model_id IS DISTINCT FROM $3)
		ORDER BY entity_id, chunk_index`, ws, ids, modelID)
	if err != nil {
		return nil, fmt.Errorf("postgres: load chunks to embed: %w", mapErr(err))
	}
	defer crows.Close()
	for crows.Next() {
		var eid uuid.UUID
		var c driver.ChunkInput
		if err := crows.Scan(&eid, &c.ID, &c.Index, &c.Content, &c.Start, &c.End); err != nil {
			return nil, fmt.Errorf("postgres: load chunks to embed: %w", err)
		}
		out[eid] = append(out[eid], c)
	}
	if err := crows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: load chunks to embed: %w", mapErr(err))
	}
	return out, nil
}

// CompleteEmbedding implements driver.Storage. It locks the entities
// first, in id order, and writes vectors only into the chunks of those
// still at the claimed generation (a concurrent rewrite replaced the
// others' chunks and queued them again); see the lock order in tx.go.
func (s *Store) CompleteEmbedding(ctx context.Context, ws string, modelID int64, done []driver.EmbedResult) error {
	ctx = withWS(ctx, ws)
	if len(done) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(done))
	for i, r := range done {
		ids[i] = r.EntityID
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, chunk_generation FROM entities WHERE workspace_id = $1 AND id = ANY($2)
			ORDER BY id FOR NO KEY UPDATE`, ws, ids)
		if err != nil {
			return err
		}
		gens := make(map[uuid.UUID]int64, len(done))
		var id uuid.UUID
		var gen int64
		if _, err := pgx.ForEachRow(rows, []any{&id, &gen}, func() error {
			gens[id] = gen
			return nil
		}); err != nil {
			return err
		}
		b := &pgx.Batch{}
		var events []driver.ChangeEvent
		for _, r := range done {
			if g, ok := gens[r.EntityID]; !ok || g != r.Generation {
				continue // deleted, or rewritten since the claim
			}
			events = append(events, driver.EntityRef(driver.EventEntityEnriched, r.EntityID, `{"chunks":`+strconv.Itoa(len(r.ChunkIDs))+`}`))
			for i, id := range r.ChunkIDs {
				b.Queue(`UPDATE chunks SET embedding = $4, model_id = $3 WHERE workspace_id = $1 AND id = $2`,
					ws, id, modelID, pgvector.NewVector(r.Vectors[i]))
			}
			b.Queue(`UPDATE entities SET enrichment_status = 'completed', enrichment_error = '', enrichment_retry_at = NULL,
				enrichment_leased_until = NULL, enrichment_queued_at = NULL
				WHERE workspace_id = $1 AND id = $2 AND chunk_generation = $3`, ws, r.EntityID, r.Generation)
		}
		if b.Len() == 0 {
			return nil
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return s.insertEventsTx(ctx, tx, ws, events)
	})
	if err != nil {
		return fmt.Errorf("postgres: complete embedding: %w", mapErr(err))
	}
	s.eventsCommitted(ws)
	return nil
}

// FailWork implements driver.StageQueue.
func (s *Store) FailWork(ctx context.Context, ws string, q driver.Queue, leases []driver.Lease, errMsg string, retryAt time.Time) error {
	ctx = withWS(ctx, ws)
	if len(leases) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(leases))
	gens := make([]int64, len(leases))
	for i, l := range leases {
		ids[i], gens[i] = l.EntityID, l.Generation
	}
	err := s.retryAborted(ctx, func() error {
		_, err := s.pool.Exec(ctx, `UPDATE entities e SET `+q.Column("status")+` = 'failed', `+q.Column("attempts")+` = e.`+q.Column("attempts")+` + 1,
				`+q.Column("error")+` = $4, `+q.Column("retry_at")+` = $5, `+q.Column("leased_until")+` = NULL
			FROM (
				SELECT x.id, u.gen FROM entities x JOIN unnest($2::uuid[], $3::bigint[]) AS u(id, gen) ON x.id = u.id
				WHERE x.workspace_id = $1
				ORDER BY x.id FOR NO KEY UPDATE OF x
			) q
			WHERE e.workspace_id = $1 AND e.id = q.id AND e.chunk_generation = q.gen`, ws, ids, gens, errMsg, retryAt)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: record %s failure: %w", q, mapErr(err))
	}
	return nil
}

// QueueStats implements driver.Storage.
func (s *Store) QueueStats(ctx context.Context, ws string, f driver.EntityFilter, maxAttempts, failureLimit int) (driver.QueueStatus, error) {
	ctx = withWS(ctx, ws)
	var st driver.QueueStatus
	var ex driver.ExtractionQueue
	args := []any{ws, maxAttempts}
	where := filterSQL(f, &args)
	err := s.pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE enrichment_status = 'pending'),
			count(*) FILTER (WHERE enrichment_status = 'completed'),
			count(*) FILTER (WHERE enrichment_status = 'failed'),
			count(*) FILTER (WHERE enrichment_status = 'failed' AND enrichment_attempts < $2),
			extract(epoch FROM now() - min(enrichment_queued_at) FILTER (WHERE enrichment_status = 'pending'))::float8,
			count(*) FILTER (WHERE extraction_status = 'pending'),
			count(*) FILTER (WHERE extraction_status = 'completed'),
			count(*) FILTER (WHERE extraction_status = 'failed'),
			count(*) FILTER (WHERE extraction_status = 'skipped')
		FROM entities e WHERE e.workspace_id = $1 AND `+where, args...).
		Scan(&st.Embedding.Pending, &st.Embedding.Completed, &st.Embedding.Failed, &st.Embedding.RetryEligible,
			&st.Embedding.OldestPendingSecs, &ex.Pending, &ex.Completed, &ex.Failed, &ex.Skipped)
	if err != nil {
		return st, fmt.Errorf("postgres: queue stats: %w", mapErr(err))
	}
	st.Extraction = &ex
	if failureLimit <= 0 {
		return st, nil
	}
	args = []any{ws, failureLimit}
	where = filterSQL(f, &args)
	rows, err := s.pool.Query(ctx, `SELECT id, type, kind, error, path, updated_at FROM (
			SELECT e.id, e.type, 'embedding' AS kind, e.enrichment_error AS error, e.metadata ->> 'path' AS path, e.updated_at
			FROM entities e WHERE e.workspace_id = $1 AND e.enrichment_status = 'failed' AND `+where+`
			UNION ALL
			SELECT e.id, e.type, 'extraction', e.extraction_error, e.metadata ->> 'path', e.updated_at
			FROM entities e WHERE e.workspace_id = $1 AND e.extraction_status = 'failed' AND `+where+`
		) f ORDER BY updated_at DESC, id LIMIT $2`, args...)
	if err != nil {
		return st, fmt.Errorf("postgres: queue failures: %w", mapErr(err))
	}
	defer rows.Close()
	for rows.Next() {
		var f driver.QueueFailure
		var path *string
		if err := rows.Scan(&f.ID, &f.Type, &f.Kind, &f.Error, &path, &f.UpdatedAt); err != nil {
			return st, fmt.Errorf("postgres: queue failures: %w", err)
		}
		if path != nil {
			f.Path = *path
		}
		f.UpdatedAt = f.UpdatedAt.UTC()
		st.Failures = append(st.Failures, f)
	}
	return st, rows.Err()
}

// GetQueryEmbedding implements driver.Storage. A hit refreshes
// last_used_at at most once an hour, so hot queries do not write per read.
func (s *Store) GetQueryEmbedding(ctx context.Context, ws, clientID string, modelID int64, key []byte) ([]float32, bool, error) {
	ctx = withWS(ctx, ws)
	var v pgvector.Vector
	err := s.pool.QueryRow(ctx, `WITH hit AS (
			SELECT embedding FROM query_embeddings
			WHERE workspace_id = $1 AND client_id = $2 AND model_id = $3 AND key = $4
		), touch AS (
			UPDATE query_embeddings SET last_used_at = now()
			WHERE workspace_id = $1 AND client_id = $2 AND model_id = $3 AND key = $4
			  AND last_used_at < now() - interval '1 hour'
		)
		SELECT embedding FROM hit`, ws, clientID, modelID, key).Scan(&v)
	if err == pgx.ErrNoRows {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("postgres: query embedding cache: %w", mapErr(err))
	}
	return v.Slice(), true, nil
}

// PutQueryEmbedding implements driver.Storage.
func (s *Store) PutQueryEmbedding(ctx context.Context, ws, clientID string, modelID int64, key []byte, vec []float32) error {
	ctx = withWS(ctx, ws)
	_, err := s.pool.Exec(ctx, `INSERT INTO query_embeddings (workspace_id, client_id, model_id, key, embedding)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (workspace_id, client_id, model_id, key) DO UPDATE SET embedding = EXCLUDED.embedding, last_used_at = now()`,
		ws, clientID, modelID, key, pgvector.NewVector(vec))
	if err != nil {
		return fmt.Errorf("postgres: store query embedding: %w", mapErr(err))
	}
	return nil
}

// PruneQueryEmbeddings implements driver.Storage.
func (s *Store) PruneQueryEmbeddings(ctx context.Context, ws string, olderThan time.Time, maxPerClient int) (int, error) {
	ctx = withWS(ctx, ws)
	tag, err := s.pool.Exec(ctx, `DELETE FROM query_embeddings q USING (
			SELECT workspace_id, client_id, model_id, key,
				last_used_at < $2 AS stale,
				row_number() OVER (PARTITION BY client_id ORDER BY last_used_at DESC) AS rn
			FROM query_embeddings WHERE workspace_id = $1
		) d
		WHERE q.workspace_id = d.workspace_id AND q.client_id = d.client_id AND q.model_id = d.model_id AND q.key = d.key
		  AND (d.stale OR d.rn > $3)`, ws, olderThan, maxPerClient)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune query embeddings: %w", mapErr(err))
	}
	return int(tag.RowsAffected()), nil
}

// EntityVectors implements driver.Storage.
func (s *Store) EntityVectors(ctx context.Context, ws string, modelID int64, f driver.EntityFilter, limit int) ([]driver.EntityVector, error) {
	ctx = withWS(ctx, ws)
	args := []any{ws, modelID}
	where := filterSQL(f, &args)
	args = append(args, limit)
	rows, err := s.pool.Query(ctx, `SELECT e.id, c.embedding::real[] FROM entities e
		JOIN chunks c ON c.workspace_id = e.workspace_id AND c.entity_id = e.id AND c.chunk_index = 0
		WHERE e.workspace_id = $1 AND c.model_id = $2 AND c.embedding IS NOT NULL AND `+where+`
		ORDER BY e.updated_at DESC, e.id LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: entity vectors: %w", mapErr(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.EntityVector, error) {
		var ev driver.EntityVector
		err := r.Scan(&ev.EntityID, &ev.Vector)
		return ev, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: entity vectors: %w", mapErr(err))
	}
	return out, nil
}

// RetryFailed implements driver.StageQueue.
func (s *Store) RetryFailed(ctx context.Context, ws string, q driver.Queue) (int, error) {
	ctx = withWS(ctx, ws)
	var n int64
	err := s.retryAborted(ctx, func() error {
		tag, err := s.pool.Exec(ctx, `UPDATE entities SET `+q.Column("status")+` = 'pending', `+q.Column("attempts")+` = 0,
				`+q.Column("error")+` = '', `+q.Column("retry_at")+` = NULL, `+q.Column("leased_until")+` = NULL,
				`+q.Column("queued_at")+` = now()
			WHERE workspace_id = $1 AND `+q.Column("status")+` = 'failed'`, ws)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: retry failed %s: %w", q, mapErr(err))
	}
	if n > 0 { // other processes' workers wake at once
		if _, err := s.pool.Exec(ctx, "SELECT pg_notify($1, $2)", s.cfg.NotifyChannel, ws); err != nil {
			return int(n), fmt.Errorf("postgres: retry failed %s: notify: %w", q, mapErr(err))
		}
	}
	return int(n), nil
}
