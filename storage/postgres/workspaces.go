package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/driver"
)

var _ driver.WorkspaceStorage = (*Store)(nil)

// KeyWorkspace implements driver.WorkspaceStorage through
// postgram_key_workspace (migration 017), a SECURITY DEFINER function: a
// role bound by row-level security can ask which workspace holds a digest
// before it knows the workspace, and learn nothing else.
func (s *Store) KeyWorkspace(ctx context.Context, hash []byte) (string, error) {
	var ws *string
	if err := s.pool.QueryRow(storeWide(ctx), "SELECT postgram_key_workspace($1)", hash).Scan(&ws); err != nil {
		return "", fmt.Errorf("postgres: find a key's workspace: %w", mapErr(err))
	}
	if ws == nil {
		return "", fmt.Errorf("api key: %w", driver.ErrNotFound)
	}
	return *ws, nil
}

// CreateWorkspace implements driver.WorkspaceStorage.
func (s *Store) CreateWorkspace(ctx context.Context, ws string, at time.Time) error {
	ctx = withWS(ctx, ws)
	tag, err := s.pool.Exec(ctx, `INSERT INTO workspaces (workspace_id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, ws, at)
	if err != nil {
		return fmt.Errorf("postgres: create workspace: %w", mapErr(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("workspace %q exists: %w", ws, driver.ErrConflict)
	}
	return nil
}

// registerWorkspace enters ws in the directory if it is not there.
func registerWorkspace(ctx context.Context, tx pgx.Tx, ws string, at time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO workspaces (workspace_id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, ws, at)
	return err
}

// Workspaces implements driver.WorkspaceStorage. Every role may read the
// directory (its policy admits every row to SELECT).
func (s *Store) Workspaces(ctx context.Context) ([]driver.WorkspaceInfo, error) {
	rows, err := s.pool.Query(storeWide(ctx), `SELECT workspace_id, created_at FROM workspaces ORDER BY workspace_id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list workspaces: %w", mapErr(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.WorkspaceInfo, error) {
		var w driver.WorkspaceInfo
		err := r.Scan(&w.Name, &w.CreatedAt)
		w.CreatedAt = w.CreatedAt.UTC()
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list workspaces: %w", mapErr(err))
	}
	if out == nil {
		out = []driver.WorkspaceInfo{}
	}
	return out, nil
}

// workspaceTables are the tables holding a workspace_id, in the order
// DeleteWorkspace empties them (the chunks' statistics triggers write
// lexeme_stats_delta, and the search-change triggers search_changes,
// emptied after them). A test checks the list against the schema.
var workspaceTables = []string{"edges", "sync_files", "chunks", "entities", "query_embeddings", "api_keys", "audit_log",
	"jobs", "events", "lexeme_stats_delta", "lexeme_stats", "search_changes", "workspaces"}

// DeleteWorkspace implements driver.WorkspaceStorage. The api_keys
// trigger tells every server that the workspace's keys are gone.
func (s *Store) DeleteWorkspace(ctx context.Context, ws string) (driver.WorkspaceCounts, error) {
	ctx = withWS(ctx, ws)
	var n driver.WorkspaceCounts
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var known bool
		if err := tx.QueryRow(ctx, `SELECT
				(SELECT count(*) FROM entities WHERE workspace_id = $1),
				(SELECT count(*) FROM chunks WHERE workspace_id = $1),
				(SELECT count(*) FROM edges WHERE workspace_id = $1),
				(SELECT count(*) FROM api_keys WHERE workspace_id = $1),
				(SELECT count(*) FROM audit_log WHERE workspace_id = $1),
				(SELECT count(*) FROM jobs WHERE workspace_id = $1),
				EXISTS (SELECT 1 FROM workspaces WHERE workspace_id = $1)`, ws).
			Scan(&n.Entities, &n.Chunks, &n.Edges, &n.Keys, &n.AuditRows, &n.Jobs, &known); err != nil {
			return err
		}
		if !known && n == (driver.WorkspaceCounts{}) {
			return fmt.Errorf("workspace %q: %w", ws, driver.ErrNotFound)
		}
		if _, err := tx.Exec(ctx, "SELECT set_config('postgram.audit_prune', 'on', true)"); err != nil {
			return err
		}
		for _, t := range workspaceTables {
			if _, err := tx.Exec(ctx, "DELETE FROM "+t+" WHERE workspace_id = $1", ws); err != nil {
				return fmt.Errorf("empty %s: %w", t, err)
			}
		}
		// One row tells the in-memory vector copies of every process
		// (Config.MemoryIndex) to load the workspace again: empty, or
		// as a workspace of the same name holds it by then.
		if _, err := tx.Exec(ctx, "INSERT INTO search_changes (workspace_id, kind) VALUES ($1, 0)", ws); err != nil {
			return fmt.Errorf("note the reset for in-memory indexes: %w", err)
		}
		_, err := tx.Exec(ctx, "SELECT set_config('postgram.audit_prune', 'off', true)")
		return err
	})
	if err != nil {
		if errors.Is(err, driver.ErrNotFound) {
			return n, err
		}
		return driver.WorkspaceCounts{}, fmt.Errorf("postgres: delete workspace: %w", mapErr(err))
	}
	return n, nil
}
