-- Background jobs (ingestion, package ingest) and the bounded event log
-- behind live events. SQLite has one writer at a time, so a claim is an
-- UPDATE ... RETURNING in a write transaction and seq (the rowid) commits
-- in order.
CREATE TABLE jobs (
    workspace_id     TEXT NOT NULL,
    id               TEXT NOT NULL CHECK (length(id) = 36),
    kind             TEXT NOT NULL CHECK (kind <> ''),
    status           TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    stage            TEXT NOT NULL,
    progress         REAL NOT NULL DEFAULT 0 CHECK (progress >= 0 AND progress <= 1),
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    last_error       TEXT NOT NULL DEFAULT '',
    run_at           INTEGER NOT NULL,
    lease_until      INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    key_id           TEXT NOT NULL DEFAULT '',
    source_url       TEXT NOT NULL DEFAULT '',
    sha256           TEXT NOT NULL DEFAULT '',
    entity_id        TEXT,
    input            TEXT NOT NULL,
    state            TEXT NOT NULL DEFAULT '{}',
    version          INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    finished_at      INTEGER,
    PRIMARY KEY (workspace_id, id)
) STRICT;

CREATE INDEX jobs_due ON jobs (workspace_id, kind, run_at) WHERE status IN ('queued', 'running');
CREATE INDEX jobs_created ON jobs (workspace_id, created_at DESC, id DESC);
CREATE INDEX jobs_sha256 ON jobs (workspace_id, sha256) WHERE sha256 <> '';
CREATE INDEX jobs_source_url ON jobs (workspace_id, source_url) WHERE source_url <> '';

CREATE TABLE events (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id TEXT NOT NULL,
    kind         TEXT NOT NULL,
    entity_id    TEXT,
    job_id       TEXT,
    type         TEXT NOT NULL DEFAULT '',
    visibility   TEXT NOT NULL DEFAULT '',
    owner        TEXT NOT NULL DEFAULT '',
    role         TEXT NOT NULL DEFAULT '',
    client_id    TEXT NOT NULL DEFAULT '',
    key_id       TEXT NOT NULL DEFAULT '',
    data         TEXT NOT NULL DEFAULT '{}',
    created_at   INTEGER NOT NULL
);

CREATE INDEX events_workspace ON events (workspace_id, seq);
CREATE INDEX events_created ON events (workspace_id, created_at);
