package postgres

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Lock order. Every write takes its row locks in one order, so no two
// writes can wait for each other in a cycle:
//
//  1. entity rows, several in ascending id, in FOR NO KEY UPDATE mode (what
//     an UPDATE of non-key columns takes; FOR UPDATE would also block the
//     foreign-key checks of chunk and edge inserts that reference them);
//  2. then the entity's chunk rows;
//  3. then edge rows (several in (source, target, relation) order) and the
//     other rows a write touches (sync state, audit, new rows).
//
// The paths: UpdateEntity locks the entity by updating it, then replaces
// its chunks. WriteBatch (deletes, sync writes, grooming) locks every
// entity it updates or retracts edges from, in id order, before its first
// op. The embedding worker claims with SKIP LOCKED (it never waits), and
// CompleteEmbedding locks its entities in id order before writing vectors
// into their chunks, only for entities whose chunks are still the claimed
// generation; FailWork and QueueReembed update their
// entities in id order. CompleteExtraction, QueueExtraction and
// ReplaceDerivedEdges lock the origin entity before its edges. Creates
// insert new rows (their foreign-key checks take KEY SHARE locks, which
// NO KEY UPDATE does not block).
//
// Before this order, CompleteEmbedding updated an entity's chunks and then
// the entity while UpdateEntity held the entity and replaced the chunks:
// PostgreSQL aborted one of them with "deadlock detected" (40P01), and a
// PATCH racing the worker answered 500.
//
// What the order cannot rule out (an edge upsert moving an edge from one
// origin to another while a delete of that origin's edges runs, two
// imports of the same ids in different orders), and serialization
// failures, are retried once: see inTx.

// inTx runs fn in a transaction. When PostgreSQL aborts it as a deadlock
// victim or for a serialization failure, it runs fn once more in a new
// transaction: the abort rolled everything back, so the second run starts
// from scratch (fn must not carry state from the first run). The store is
// the right place for this retry: it owns the transaction, so it replays
// the whole of it and nothing else, and only it knows these SQLSTATEs mean
// "nothing happened, try again". A caller above the store could not tell a
// replayable abort from a partial failure.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return s.retryAborted(ctx, func() error { return pgx.BeginFunc(ctx, s.pool, fn) })
}

// inOwnerTx is inTx on the owner's connection (Config.OwnerURL): for
// the store-wide work that must see every workspace's rows.
func (s *Store) inOwnerTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return s.retryAborted(ctx, func() error { return pgx.BeginFunc(ctx, s.owner, fn) })
}

// retryAborted runs f, and once more when PostgreSQL aborted it as a
// deadlock victim or for a serialization failure (f is one statement or
// one transaction).
func (s *Store) retryAborted(ctx context.Context, f func() error) error {
	err := f()
	if !isAborted(err) || ctx.Err() != nil {
		return err
	}
	s.aborted.Add(1)
	s.log.Warn("postgres aborted a transaction to resolve contention; retrying it once", "err", err)
	return f()
}

// isAborted reports a transaction PostgreSQL rolled back to break a
// deadlock (40P01) or a serialization failure (40001).
func isAborted(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// lockEntities locks the workspace's entities among ids in ascending id
// order (rule 1 of the lock order); ids need not be sorted or distinct.
func lockEntities(ctx context.Context, tx pgx.Tx, ws string, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `SELECT 1 FROM entities WHERE workspace_id = $1 AND id = ANY($2)
		ORDER BY id FOR NO KEY UPDATE`, ws, ids)
	return err
}
