package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/vecscan"
)

// now is the database clock: the store's process time, in stored precision.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// claimWorkSQL returns the statement leasing up to ?3 entities with work
// in queue q: ?1 now, ?2 workspace, ?4 max attempts, ?5 lease (µs). The
// status IN list repeats the predicate of the queue's partial index
// (entities_enrichment_queue, entities_extraction_queue): SQLite uses a
// partial index only when the WHERE clause states its predicate, and the
// OR below does not (without it every claim read every entity). The column
// names come from driver.Queue.Column, never from input.
func claimWorkSQL(q driver.Queue, afterEmbedding bool) string {
	after, override := "", ", '', ''"
	if afterEmbedding {
		after = "\n\t\t  AND enrichment_status = 'completed'"
	}
	if q == driver.QueueExtraction {
		override = ", extraction_provider, extraction_model"
	}
	return `
	UPDATE entities SET ` + q.Column("leased_until") + ` = ?1 + ?5
	WHERE rid IN (
		SELECT rid FROM entities
		WHERE workspace_id = ?2
		  AND ` + q.Column("status") + ` IN ('pending', 'failed')
		  AND (` + q.Column("status") + ` = 'pending' OR (` + q.Column("status") + ` = 'failed' AND ` + q.Column("attempts") + ` < ?4))
		  AND (` + q.Column("retry_at") + ` IS NULL OR ` + q.Column("retry_at") + ` <= ?1)
		  AND (` + q.Column("leased_until") + ` IS NULL OR ` + q.Column("leased_until") + ` < ?1)` + after + `
		ORDER BY ` + q.Column("queued_at") + ` NULLS FIRST, id
		LIMIT ?3
	)
	RETURNING id, chunk_generation, ` + q.Column("attempts") + override
}

// ClaimWork implements driver.StageQueue. The claim is one write
// transaction, and write transactions are serialised (in-process by the
// single writer connection, across processes by SQLite's write lock), so
// concurrent workers never claim the same entity; a lease that expires (a
// crashed worker) makes the entity claimable again.
func (s *Store) ClaimWork(ctx context.Context, ws string, c driver.WorkClaim) ([]driver.Lease, error) {
	var leases []driver.Lease
	query := claimWorkSQL(c.Queue, c.AfterEmbedding)
	err := s.write(ctx, func(tx *wtx) error {
		leases = leases[:0]
		rows, err := tx.QueryContext(ctx, query, micros(now()), ws, c.Max, c.MaxAttempts, c.Lease.Microseconds())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l driver.Lease
			var id string
			if err := rows.Scan(&id, &l.Generation, &l.Attempts, &l.Override.Provider, &l.Override.Model); err != nil {
				return err
			}
			if l.EntityID, err = uuid.Parse(id); err != nil {
				return err
			}
			leases = append(leases, l)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim %s work: %w", c.Queue, mapErr(err))
	}
	return leases, nil
}

// ChunksToEmbed implements driver.Storage.
func (s *Store) ChunksToEmbed(ctx context.Context, ws string, modelID int64, ids []uuid.UUID) (map[uuid.UUID][]driver.ChunkInput, error) {
	out := make(map[uuid.UUID][]driver.ChunkInput, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	crows, err := s.r.QueryContext(ctx, `SELECT c.entity_id, c.id, c.chunk_index, c.content, c.start_offset, c.end_offset
		FROM (SELECT DISTINCT value FROM json_each(?)) j CROSS JOIN chunks c ON c.workspace_id = ? AND c.entity_id = j.value
		WHERE NOT EXISTS (SELECT 1 FROM chunk_embeddings v WHERE v.chunk_rid = c.rid AND v.model_id = ?)
		ORDER BY c.entity_id, c.chunk_index`, idsJSON(ids), ws, modelID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: load chunks to embed: %w", mapErr(err))
	}
	defer crows.Close()
	for crows.Next() {
		var eid, cid string
		var c driver.ChunkInput
		if err := crows.Scan(&eid, &cid, &c.Index, &c.Content, &c.Start, &c.End); err != nil {
			return nil, fmt.Errorf("sqlite: load chunks to embed: %w", err)
		}
		e, err := uuid.Parse(eid)
		if err != nil {
			return nil, fmt.Errorf("sqlite: load chunks to embed: %w", err)
		}
		if c.ID, err = uuid.Parse(cid); err != nil {
			return nil, fmt.Errorf("sqlite: load chunks to embed: %w", err)
		}
		out[e] = append(out[e], c)
	}
	if err := crows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: load chunks to embed: %w", mapErr(err))
	}
	return out, nil
}

// CompleteEmbedding implements driver.Storage.
func (s *Store) CompleteEmbedding(ctx context.Context, ws string, modelID int64, done []driver.EmbedResult) error {
	if len(done) == 0 {
		return nil
	}
	m, err := s.model(ctx, modelID)
	if err != nil {
		return err
	}
	// Validate and encode before taking the write lock.
	blobs := make([][][]byte, len(done))
	for i, r := range done {
		if len(r.Vectors) != len(r.ChunkIDs) {
			return fmt.Errorf("sqlite: complete embedding of %s: %d vectors for %d chunks: %w", r.EntityID, len(r.Vectors), len(r.ChunkIDs), driver.ErrInvalidArgument)
		}
		blobs[i] = make([][]byte, len(r.Vectors))
		for j, v := range r.Vectors {
			if err := checkVector(v, m.Dimensions); err != nil {
				return fmt.Errorf("sqlite: complete embedding of chunk %s: %w", r.ChunkIDs[j], err)
			}
			blobs[i][j] = vecscan.EncodeVector(v)
		}
	}
	err = s.write(ctx, func(tx *wtx) error {
		vec, err := tx.PrepareContext(ctx, `INSERT INTO chunk_embeddings (chunk_rid, workspace_id, chunk_id, entity_rid, model_id, embedding)
			SELECT rid, workspace_id, id, entity_rid, ?3, ?4 FROM chunks WHERE workspace_id = ?1 AND id = ?2
			ON CONFLICT (chunk_rid) DO UPDATE SET model_id = excluded.model_id, embedding = excluded.embedding`)
		if err != nil {
			return err
		}
		defer vec.Close()
		ent, err := tx.PrepareContext(ctx, `UPDATE entities SET enrichment_status = 'completed', enrichment_error = '', enrichment_retry_at = NULL,
				enrichment_leased_until = NULL, enrichment_queued_at = NULL
			WHERE workspace_id = ? AND id = ? AND chunk_generation = ?`)
		if err != nil {
			return err
		}
		defer ent.Close()
		var events []driver.ChangeEvent
		for i, r := range done {
			for j, id := range r.ChunkIDs {
				if _, err := vec.ExecContext(ctx, ws, id.String(), modelID, blobs[i][j]); err != nil {
					return err
				}
			}
			res, err := ent.ExecContext(ctx, ws, r.EntityID.String(), r.Generation)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err == nil && n > 0 {
				events = append(events, driver.EntityRef(driver.EventEntityEnriched, r.EntityID, `{"chunks":`+strconv.Itoa(len(r.ChunkIDs))+`}`))
			}
		}
		return insertEvents(ctx, tx, ws, events)
	})
	if err != nil {
		return fmt.Errorf("sqlite: complete embedding: %w", mapErr(err))
	}
	s.eventSignal.Notify(ws)
	return nil
}

// checkVector applies pgvector's input rules: the model's dimensions and
// finite components.
func checkVector(v []float32, dims int) error {
	if len(v) != dims {
		return fmt.Errorf("%w: vector has %d dimensions, the model has %d", driver.ErrInvalidArgument, len(v), dims)
	}
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: vector components must be finite", driver.ErrInvalidArgument)
		}
	}
	return nil
}

// FailWork implements driver.StageQueue.
func (s *Store) FailWork(ctx context.Context, ws string, q driver.Queue, leases []driver.Lease, errMsg string, retryAt time.Time) error {
	if len(leases) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *wtx) error {
		st, err := tx.PrepareContext(ctx, `UPDATE entities SET `+q.Column("status")+` = 'failed', `+q.Column("attempts")+` = `+q.Column("attempts")+` + 1,
				`+q.Column("error")+` = ?, `+q.Column("retry_at")+` = ?, `+q.Column("leased_until")+` = NULL
			WHERE workspace_id = ? AND id = ? AND chunk_generation = ?`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, l := range leases {
			if _, err := st.ExecContext(ctx, errMsg, micros(retryAt), ws, l.EntityID.String(), l.Generation); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: record %s failure: %w", q, mapErr(err))
	}
	return nil
}

// QueueStats implements driver.Storage.
func (s *Store) QueueStats(ctx context.Context, ws string, f driver.EntityFilter, maxAttempts, failureLimit int) (driver.QueueStatus, error) {
	var st driver.QueueStatus
	var ex driver.ExtractionQueue
	var oldest sql.NullInt64
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, fmt.Errorf("sqlite: queue stats: %w", mapErr(err))
	}
	defer tx.Rollback()
	args := []any{maxAttempts, ws}
	where := filterSQL(f, &args)
	err = tx.QueryRowContext(ctx, `SELECT
			count(*) FILTER (WHERE enrichment_status = 'pending'),
			count(*) FILTER (WHERE enrichment_status = 'completed'),
			count(*) FILTER (WHERE enrichment_status = 'failed'),
			count(*) FILTER (WHERE enrichment_status = 'failed' AND enrichment_attempts < ?),
			min(enrichment_queued_at) FILTER (WHERE enrichment_status = 'pending'),
			count(*) FILTER (WHERE extraction_status = 'pending'),
			count(*) FILTER (WHERE extraction_status = 'completed'),
			count(*) FILTER (WHERE extraction_status = 'failed'),
			count(*) FILTER (WHERE extraction_status = 'skipped')
		FROM entities e WHERE e.workspace_id = ? AND `+where, args...).
		Scan(&st.Embedding.Pending, &st.Embedding.Completed, &st.Embedding.Failed, &st.Embedding.RetryEligible,
			&oldest, &ex.Pending, &ex.Completed, &ex.Failed, &ex.Skipped)
	if err != nil {
		return st, fmt.Errorf("sqlite: queue stats: %w", mapErr(err))
	}
	if oldest.Valid {
		secs := float64(micros(time.Now())-oldest.Int64) / 1e6
		st.Embedding.OldestPendingSecs = &secs
	}
	st.Extraction = &ex
	if failureLimit <= 0 {
		return st, nil
	}
	args = []any{ws}
	embWhere := filterSQL(f, &args)
	args = append(args, ws)
	extWhere := filterSQL(f, &args)
	args = append(args, failureLimit)
	rows, err := tx.QueryContext(ctx, `SELECT id, type, kind, error, path, updated_at FROM (
			SELECT e.id, e.type, 'embedding' AS kind, e.enrichment_error AS error, e.metadata ->> '$.path' AS path, e.updated_at
			FROM entities e WHERE e.workspace_id = ? AND e.enrichment_status = 'failed' AND `+embWhere+`
			UNION ALL
			SELECT e.id, e.type, 'extraction', e.extraction_error, e.metadata ->> '$.path', e.updated_at
			FROM entities e WHERE e.workspace_id = ? AND e.extraction_status = 'failed' AND `+extWhere+`
		) ORDER BY updated_at DESC, id LIMIT ?`, args...)
	if err != nil {
		return st, fmt.Errorf("sqlite: queue failures: %w", mapErr(err))
	}
	defer rows.Close()
	for rows.Next() {
		var f driver.QueueFailure
		var id string
		var path sql.NullString
		var updated int64
		if err := rows.Scan(&id, &f.Type, &f.Kind, &f.Error, &path, &updated); err != nil {
			return st, fmt.Errorf("sqlite: queue failures: %w", err)
		}
		if f.ID, err = uuid.Parse(id); err != nil {
			return st, fmt.Errorf("sqlite: queue failures: %w", err)
		}
		f.Path = path.String
		f.UpdatedAt = fromMicros(updated)
		st.Failures = append(st.Failures, f)
	}
	return st, rows.Err()
}

// GetQueryEmbedding implements driver.Storage. A hit refreshes
// last_used_at at most once an hour, so hot queries do not write per read.
func (s *Store) GetQueryEmbedding(ctx context.Context, ws, clientID string, modelID int64, key []byte) ([]float32, bool, error) {
	var blob []byte
	var used int64
	err := s.queryRow(ctx, `SELECT embedding, last_used_at FROM query_embeddings
		WHERE workspace_id = ? AND client_id = ? AND model_id = ? AND key = ?`, ws, clientID, modelID, key).Scan(&blob, &used)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: query embedding cache: %w", mapErr(err))
	}
	t := now()
	if used < micros(t.Add(-time.Hour)) {
		err := s.write(ctx, func(tx *wtx) error {
			_, err := tx.ExecContext(ctx, `UPDATE query_embeddings SET last_used_at = ?
				WHERE workspace_id = ? AND client_id = ? AND model_id = ? AND key = ?`, micros(t), ws, clientID, modelID, key)
			return err
		})
		if err != nil {
			return nil, false, fmt.Errorf("sqlite: query embedding cache: %w", mapErr(err))
		}
	}
	return vecscan.DecodeVector(blob, make([]float32, 0, len(blob)/4)), true, nil
}

// PutQueryEmbedding implements driver.Storage.
func (s *Store) PutQueryEmbedding(ctx context.Context, ws, clientID string, modelID int64, key []byte, vec []float32) error {
	t := micros(now())
	err := s.write(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO query_embeddings (workspace_id, client_id, model_id, key, embedding, created_at, last_used_at)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
			ON CONFLICT (workspace_id, client_id, model_id, key) DO UPDATE SET embedding = excluded.embedding, last_used_at = excluded.last_used_at`,
			ws, clientID, modelID, key, vecscan.EncodeVector(vec), t)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: store query embedding: %w", mapErr(err))
	}
	return nil
}

// PruneQueryEmbeddings implements driver.Storage.
func (s *Store) PruneQueryEmbeddings(ctx context.Context, ws string, olderThan time.Time, maxPerClient int) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM query_embeddings WHERE rowid IN (
				SELECT rowid FROM (
					SELECT rowid, last_used_at < ?2 AS stale,
						row_number() OVER (PARTITION BY client_id ORDER BY last_used_at DESC) AS rn
					FROM query_embeddings WHERE workspace_id = ?1
				) WHERE stale OR rn > ?3
			)`, ws, micros(olderThan), maxPerClient)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune query embeddings: %w", mapErr(err))
	}
	return int(n), nil
}

// EntityVectors implements driver.Storage.
func (s *Store) EntityVectors(ctx context.Context, ws string, modelID int64, f driver.EntityFilter, limit int) ([]driver.EntityVector, error) {
	args := []any{modelID, ws}
	where := filterSQL(f, &args)
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, `SELECT e.id, v.embedding FROM entities e
		JOIN chunks c ON c.entity_rid = e.rid AND c.chunk_index = 0
		JOIN chunk_embeddings v ON v.chunk_rid = c.rid AND v.model_id = ?
		WHERE e.workspace_id = ? AND `+where+`
		ORDER BY e.updated_at DESC, e.id LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: entity vectors: %w", mapErr(err))
	}
	defer rows.Close()
	var out []driver.EntityVector
	for rows.Next() {
		var id string
		var blob []byte
		if err := rows.Scan(&id, &blob); err != nil {
			return nil, fmt.Errorf("sqlite: entity vectors: %w", err)
		}
		ev := driver.EntityVector{Vector: vecscan.DecodeVector(blob, nil)}
		if ev.EntityID, err = uuid.Parse(id); err != nil {
			return nil, fmt.Errorf("sqlite: entity vectors: %w", err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: entity vectors: %w", mapErr(err))
	}
	return out, nil
}

// RetryFailed implements driver.StageQueue.
func (s *Store) RetryFailed(ctx context.Context, ws string, q driver.Queue) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE entities SET `+q.Column("status")+` = 'pending', `+q.Column("attempts")+` = 0,
				`+q.Column("error")+` = '', `+q.Column("retry_at")+` = NULL, `+q.Column("leased_until")+` = NULL,
				`+q.Column("queued_at")+` = ?
			WHERE workspace_id = ? AND `+q.Column("status")+` = 'failed'`, micros(now()), ws)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: retry failed %s: %w", q, mapErr(err))
	}
	return int(n), nil
}
