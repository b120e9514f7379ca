-- Memory lifecycle, GTD tasks and Markdown sync (as migrations/006_lifecycle.sql
-- at the module root).

-- What the server knows of each synced Markdown file: one row per
-- (repo, path). sync_status "deleted" means the file left the folder and
-- its entity was archived.
CREATE TABLE sync_files (
    workspace_id  TEXT NOT NULL,
    repo          TEXT NOT NULL,
    path          TEXT NOT NULL,
    sha           TEXT NOT NULL,
    entity_id     TEXT NOT NULL,
    sync_status   TEXT NOT NULL CHECK (sync_status IN ('synced', 'deleted')),
    last_synced   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, repo, path),
    FOREIGN KEY (workspace_id, entity_id) REFERENCES entities (workspace_id, id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
CREATE INDEX sync_files_entity ON sync_files (workspace_id, entity_id);

-- Task lists filtered by GTD context, newest first.
CREATE INDEX entities_type_context ON entities (workspace_id, type, (metadata ->> '$.context'), created_at DESC, id DESC);

-- Session-context grooming selects one client's working context by age.
CREATE INDEX entities_session_context ON entities (workspace_id, client_id, updated_at)
    WHERE memory_role = 'session_context';
