-- Memory lifecycle, GTD tasks and Markdown sync.

-- What the server knows of each synced Markdown file: one row per
-- (repo, path). The entity is the file's document; sync_status "deleted"
-- means the file left the folder and its entity was archived.
CREATE TABLE sync_files (
    workspace_id  text NOT NULL,
    repo          text NOT NULL,
    path          text NOT NULL,
    sha           text NOT NULL,
    entity_id     uuid NOT NULL,
    sync_status   text NOT NULL CHECK (sync_status IN ('synced', 'deleted')),
    last_synced   timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, repo, path),
    FOREIGN KEY (workspace_id, entity_id) REFERENCES entities (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX sync_files_entity ON sync_files (workspace_id, entity_id);

-- Task lists filtered by GTD context, newest first.
CREATE INDEX entities_type_context ON entities (workspace_id, type, (metadata ->> 'context'), created_at DESC, id DESC);

-- Session-context grooming selects one client's working context by age.
CREATE INDEX entities_session_context ON entities (workspace_id, client_id, updated_at)
    WHERE memory_role = 'session_context';
