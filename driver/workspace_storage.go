package driver

import (
	"context"
	"time"
)

// WorkspaceInfo is one entry of a store's workspace directory.
type WorkspaceInfo struct {
	Name      string
	CreatedAt time.Time
}

// WorkspaceStorage is implemented by stores that serve many workspaces
// from one server (package workspaces): a directory of the workspaces,
// the lookup of an API key's workspace, and the removal of a workspace
// with everything in it. Both bundled backends implement it.
type WorkspaceStorage interface {
	// KeyWorkspace returns the workspace that holds the key with this
	// digest (revoked or expired ones included: the workspace's own check
	// says why such a key is refused). An unknown digest, or one held by
	// two workspaces, returns ErrNotFound. On PostgreSQL it works for a
	// role bound by row-level security without any workspace setting (a
	// SECURITY DEFINER function answers it).
	KeyWorkspace(ctx context.Context, hash []byte) (string, error)
	// CreateWorkspace adds ws to the directory; ErrConflict when it is
	// there already. CreateKey adds a key's workspace too.
	CreateWorkspace(ctx context.Context, ws string, at time.Time) error
	// Workspaces lists the directory by name.
	Workspaces(ctx context.Context) ([]WorkspaceInfo, error)
	// DeleteWorkspace removes every row of ws from every table (entities
	// and their chunks, embeddings, edges, keys, the audit log, sync
	// state, jobs, events, caches, statistics) and its directory entry,
	// in one transaction, deleting securely where the backend can.
	// ErrNotFound when ws is neither in the directory nor holds any row.
	DeleteWorkspace(ctx context.Context, ws string) (WorkspaceCounts, error)
}

// WorkspaceCounts says what DeleteWorkspace removed.
type WorkspaceCounts struct {
	Entities  int `json:"entities"`
	Chunks    int `json:"chunks"`
	Edges     int `json:"edges"`
	Keys      int `json:"keys"`
	AuditRows int `json:"audit_rows"`
	Jobs      int `json:"jobs"`
}
