package postgres

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/driver"
)

var _ driver.PurgeStorage = (*Store)(nil)

// PurgeEntities implements driver.PurgeStorage. The entities are locked
// in id order first (the lock order of tx.go); the foreign keys cascade
// the delete to chunks (whose statement trigger queues their statistics'
// removal), edges by either end or by origin, and sync state.
func (s *Store) PurgeEntities(ctx context.Context, ws string, ids []uuid.UUID, audit *driver.AuditEntry) (driver.PurgeCounts, error) {
	ctx = withWS(ctx, ws)
	var n driver.PurgeCounts
	if len(ids) == 0 {
		return n, nil
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		n = driver.PurgeCounts{}
		if err := lockEntities(ctx, tx, ws, ids); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT
				(SELECT count(*) FROM entities WHERE workspace_id = $1 AND id = ANY($2)),
				(SELECT count(*) FROM chunks WHERE workspace_id = $1 AND entity_id = ANY($2)),
				(SELECT count(*) FROM edges WHERE workspace_id = $1 AND (source_id = ANY($2) OR target_id = ANY($2) OR origin_id = ANY($2))),
				(SELECT count(*) FROM sync_files WHERE workspace_id = $1 AND entity_id = ANY($2))`,
			ws, ids).Scan(&n.Entities, &n.Chunks, &n.Edges, &n.SyncFiles); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM entities WHERE workspace_id = $1 AND id = ANY($2)`, ws, ids); err != nil {
			return err
		}
		// The entities' earlier events go with them; the log says they
		// were purged.
		if _, err := tx.Exec(ctx, `DELETE FROM events WHERE workspace_id = $1 AND entity_id = ANY($2)`, ws, ids); err != nil {
			return err
		}
		if err := s.insertEventsTx(ctx, tx, ws, purgeEvents(ids)); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM query_embeddings WHERE workspace_id = $1`, ws)
		if err != nil {
			return err
		}
		n.QueryEmbeddings = int(tag.RowsAffected())
		if audit != nil {
			a := *audit
			a.Details = n.Details()
			for k, v := range audit.Details {
				a.Details[k] = v
			}
			return auditInsert(ctx, tx, ws, &a)
		}
		return nil
	})
	if err != nil {
		return driver.PurgeCounts{}, fmt.Errorf("postgres: purge: %w", mapErr(err))
	}
	s.eventsCommitted(ws)
	return n, nil
}

// purgeEvents are the events of a purge.
func purgeEvents(ids []uuid.UUID) []driver.ChangeEvent {
	evs := make([]driver.ChangeEvent, len(ids))
	for i, id := range ids {
		evs[i] = driver.EntityRef(driver.EventEntityPurged, id, "")
	}
	return evs
}

// ScrubDeleted implements driver.PurgeStorage: it folds the pending
// statistics rows (which hold the deleted chunks' tsvectors) into
// lexeme_stats, which drops the lexemes no chunk holds any more, then
// vacuums the tables that held content so their dead row versions are
// removed. (PostgreSQL does not promise to zero the freed space on
// disk; its WAL and any replicas or base backups keep what they held.)
func (s *Store) ScrubDeleted(ctx context.Context) error {
	if _, err := s.FoldStats(ctx); err != nil {
		return err
	}
	// A fold running elsewhere may have held the lock: fold again until
	// no pending rows are left (bounded).
	for i := 0; i < 50; i++ {
		var pending bool
		if err := s.owner.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM lexeme_stats_delta)`).Scan(&pending); err != nil {
			return fmt.Errorf("postgres: scrub: %w", mapErr(err))
		}
		if !pending {
			break
		}
		if _, err := s.FoldStats(ctx); err != nil {
			return err
		}
	}
	_, err := s.owner.Exec(ctx, `VACUUM entities, chunks, edges, sync_files, query_embeddings, lexeme_stats, lexeme_stats_delta`)
	if err != nil {
		return fmt.Errorf("postgres: scrub: vacuum: %w", mapErr(err))
	}
	return nil
}
