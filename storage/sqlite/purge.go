package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
)

var _ driver.PurgeStorage = (*Store)(nil)

// PurgeEntities implements driver.PurgeStorage. The delete runs with
// PRAGMA secure_delete on (SQLite overwrites the deleted cells and freed
// pages with zeros); the foreign keys and triggers of the schema take the
// chunks, embeddings, edges (by either end or by origin), entity heads
// and sync state with the entity, and log the change for every process's
// in-memory indexes.
func (s *Store) PurgeEntities(ctx context.Context, ws string, ids []uuid.UUID, audit *driver.AuditEntry) (driver.PurgeCounts, error) {
	var n driver.PurgeCounts
	if len(ids) == 0 {
		return n, nil
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = id.String()
	}
	list, err := json.Marshal(names)
	if err != nil {
		return n, err
	}
	err = s.secureWrite(ctx, func(tx *wtx) error {
		const in = "(SELECT value FROM json_each(?2))"
		if err := tx.QueryRowContext(ctx, `SELECT
				(SELECT count(*) FROM entities WHERE workspace_id = ?1 AND id IN `+in+`),
				(SELECT count(*) FROM chunks WHERE workspace_id = ?1 AND entity_id IN `+in+`),
				(SELECT count(*) FROM edges WHERE workspace_id = ?1 AND (source_id IN `+in+` OR target_id IN `+in+` OR origin_id IN `+in+`)),
				(SELECT count(*) FROM sync_files WHERE workspace_id = ?1 AND entity_id IN `+in+`)`,
			ws, string(list)).Scan(&n.Entities, &n.Chunks, &n.Edges, &n.SyncFiles); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM edges WHERE workspace_id = ?1 AND origin_id IN `+in, ws, string(list)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM entities WHERE workspace_id = ?1 AND id IN `+in, ws, string(list)); err != nil {
			return err
		}
		// The entities' earlier events go with them; the log says they
		// were purged.
		if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE workspace_id = ?1 AND entity_id IN `+in, ws, string(list)); err != nil {
			return err
		}
		evs := make([]driver.ChangeEvent, len(ids))
		for i, id := range ids {
			evs[i] = driver.EntityRef(driver.EventEntityPurged, id, "")
		}
		if err := insertEvents(ctx, tx, ws, evs); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM query_embeddings WHERE workspace_id = ?`, ws)
		if err != nil {
			return err
		}
		q, err := res.RowsAffected()
		if err != nil {
			return err
		}
		n.QueryEmbeddings = int(q)
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
		return driver.PurgeCounts{}, fmt.Errorf("sqlite: purge: %w", mapErr(err))
	}
	s.eventSignal.Notify(ws)
	return n, nil
}

// secureWrite runs fn in a write transaction on the writer connection with
// PRAGMA secure_delete on, and turns it off again afterwards.
func (s *Store) secureWrite(ctx context.Context, fn func(tx *wtx) error) error {
	if s.closed.Load() {
		return fmt.Errorf("store is closed: %w", driver.ErrUnavailable)
	}
	c, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "PRAGMA secure_delete = ON"); err != nil {
		return err
	}
	defer c.ExecContext(context.WithoutCancel(ctx), "PRAGMA secure_delete = OFF")
	stx, err := c.BeginTx(ctx, nil)
	if err != nil {
		s.noteWriteErr(err)
		return err
	}
	// No statement cache: preparing through s.w would wait for the very
	// connection this transaction holds.
	tx := &wtx{Tx: stx}
	if err := fn(tx); err != nil {
		tx.Rollback()
		s.noteWriteErr(err)
		return err
	}
	if err := tx.Commit(); err != nil {
		tx.Rollback()
		s.noteWriteErr(err)
		return err
	}
	s.writeState.Succeeded()
	return nil
}

// ScrubDeleted implements driver.PurgeStorage: VACUUM rewrites the
// database without the free space in which earlier versions of rows
// (content replaced by an update, deleted chunks) may linger, with secure
// delete on; then the WAL, which held the deleted content's pages, is
// checkpointed and truncated to zero bytes. Readers of other connections
// (or processes) that hold an old snapshot delay the checkpoint; it is
// retried for up to a minute.
func (s *Store) ScrubDeleted(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlite: scrub: store is closed: %w", driver.ErrUnavailable)
	}
	c, err := s.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: scrub: %w", mapErr(err))
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "PRAGMA secure_delete = ON"); err != nil {
		return fmt.Errorf("sqlite: scrub: %w", mapErr(err))
	}
	defer c.ExecContext(context.WithoutCancel(ctx), "PRAGMA secure_delete = OFF")
	if _, err := c.ExecContext(ctx, "VACUUM"); err != nil {
		return fmt.Errorf("sqlite: scrub: vacuum: %w", mapErr(err))
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var busy, logPages, done int
		if err := c.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &done); err != nil {
			return fmt.Errorf("sqlite: scrub: checkpoint: %w", mapErr(err))
		}
		if busy == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sqlite: scrub: the WAL could not be truncated: other readers keep an old snapshot open: %w", driver.ErrUnavailable)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
