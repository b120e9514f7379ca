-- The workspace directory: one server serves every workspace of the store
-- (package workspaces), finding a request's workspace from its API key.
-- pgm-admin workspace create adds a name; creating a key adds its
-- workspace too; pgm-admin workspace delete removes it with everything in
-- it. The workspaces that already hold rows are entered here.
CREATE TABLE workspaces (
    workspace_id TEXT PRIMARY KEY,
    created_at   INTEGER NOT NULL
) STRICT;

INSERT OR IGNORE INTO workspaces (workspace_id, created_at)
SELECT workspace_id, min(at) FROM (
    SELECT workspace_id, created_at AS at FROM entities
    UNION ALL SELECT workspace_id, created_at FROM api_keys
    UNION ALL SELECT workspace_id, at FROM audit_log
) GROUP BY workspace_id;

-- A key is found by its digest alone before its workspace is known.
CREATE INDEX api_keys_key_hash ON api_keys (key_hash);
