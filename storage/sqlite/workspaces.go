package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/postgram-go/postgram/driver"
)

var _ driver.WorkspaceStorage = (*Store)(nil)

// KeyWorkspace implements driver.WorkspaceStorage.
func (s *Store) KeyWorkspace(ctx context.Context, hash []byte) (string, error) {
	var ws sql.NullString
	err := s.r.QueryRowContext(ctx, `SELECT CASE WHEN count(*) = 1 THEN min(workspace_id) END FROM api_keys WHERE key_hash = ?`, hash).Scan(&ws)
	if err != nil {
		return "", fmt.Errorf("sqlite: find a key's workspace: %w", mapErr(err))
	}
	if !ws.Valid {
		return "", fmt.Errorf("api key: %w", driver.ErrNotFound)
	}
	return ws.String, nil
}

// CreateWorkspace implements driver.WorkspaceStorage.
func (s *Store) CreateWorkspace(ctx context.Context, ws string, at time.Time) error {
	err := s.write(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO workspaces (workspace_id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, ws, micros(at))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("workspace %q exists: %w", ws, driver.ErrConflict)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: create workspace: %w", mapErr(err))
	}
	return nil
}

// registerWorkspace enters ws in the directory if it is not there.
func registerWorkspace(ctx context.Context, tx *wtx, ws string, at time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO workspaces (workspace_id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, ws, micros(at))
	return err
}

// Workspaces implements driver.WorkspaceStorage.
func (s *Store) Workspaces(ctx context.Context) ([]driver.WorkspaceInfo, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT workspace_id, created_at FROM workspaces ORDER BY workspace_id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list workspaces: %w", mapErr(err))
	}
	defer rows.Close()
	out := []driver.WorkspaceInfo{}
	for rows.Next() {
		var w driver.WorkspaceInfo
		var at int64
		if err := rows.Scan(&w.Name, &at); err != nil {
			return nil, fmt.Errorf("sqlite: list workspaces: %w", mapErr(err))
		}
		w.CreatedAt = fromMicros(at)
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list workspaces: %w", mapErr(err))
	}
	return out, nil
}

// workspaceTables are the tables holding a workspace_id, in the order
// DeleteWorkspace empties them (edges and chunks before the entities they
// reference; the foreign keys' cascades and the change-log triggers take
// chunk embeddings, entity heads and every process's in-memory indexes
// along). A test checks the list against the schema.
var workspaceTables = []string{"edges", "sync_files", "chunk_embeddings", "chunks", "entities", "query_embeddings",
	"api_keys", "audit_log", "jobs", "events", "workspaces"}

// DeleteWorkspace implements driver.WorkspaceStorage, with secure delete
// on (the freed pages are zeroed; ScrubDeleted also clears the WAL).
func (s *Store) DeleteWorkspace(ctx context.Context, ws string) (driver.WorkspaceCounts, error) {
	var n driver.WorkspaceCounts
	err := s.secureWrite(ctx, func(tx *wtx) error {
		var known int
		if err := tx.QueryRowContext(ctx, `SELECT
				(SELECT count(*) FROM entities WHERE workspace_id = ?1),
				(SELECT count(*) FROM chunks WHERE workspace_id = ?1),
				(SELECT count(*) FROM edges WHERE workspace_id = ?1),
				(SELECT count(*) FROM api_keys WHERE workspace_id = ?1),
				(SELECT count(*) FROM audit_log WHERE workspace_id = ?1),
				(SELECT count(*) FROM jobs WHERE workspace_id = ?1),
				(SELECT count(*) FROM workspaces WHERE workspace_id = ?1)`, ws).
			Scan(&n.Entities, &n.Chunks, &n.Edges, &n.Keys, &n.AuditRows, &n.Jobs, &known); err != nil {
			return err
		}
		if known == 0 && n == (driver.WorkspaceCounts{}) {
			return fmt.Errorf("workspace %q: %w", ws, driver.ErrNotFound)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO audit_prune_gate (open) VALUES (1)"); err != nil {
			return err
		}
		for _, t := range workspaceTables {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+t+" WHERE workspace_id = ?", ws); err != nil {
				return fmt.Errorf("empty %s: %w", t, err)
			}
		}
		_, err := tx.ExecContext(ctx, "DELETE FROM audit_prune_gate")
		return err
	})
	if err != nil {
		if errors.Is(err, driver.ErrNotFound) {
			return n, err
		}
		return driver.WorkspaceCounts{}, fmt.Errorf("sqlite: delete workspace: %w", mapErr(err))
	}
	s.eventSignal.Notify(ws)
	return n, nil
}
