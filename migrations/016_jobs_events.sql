-- Background jobs (ingestion, package ingest) and the bounded event log
-- behind live events (GET /api/events, the WebSocket, pgm watch).
--
-- A job is claimed with FOR UPDATE SKIP LOCKED and leased (lease_until),
-- so every server on the database shares the queue and a job whose server
-- died is claimed again. Updates are compare-and-set on version.
CREATE TABLE jobs (
    workspace_id     text NOT NULL,
    id               uuid NOT NULL,
    kind             text NOT NULL CHECK (kind <> ''),
    status           text NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    stage            text NOT NULL,
    progress         double precision NOT NULL DEFAULT 0 CHECK (progress >= 0 AND progress <= 1),
    attempts         integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL,
    last_error       text NOT NULL DEFAULT '',
    run_at           timestamptz NOT NULL,
    lease_until      timestamptz,
    cancel_requested boolean NOT NULL DEFAULT false,
    key_id           text NOT NULL DEFAULT '',
    source_url       text NOT NULL DEFAULT '',
    sha256           text NOT NULL DEFAULT '',
    entity_id        uuid,
    input            jsonb NOT NULL,
    state            jsonb NOT NULL DEFAULT '{}',
    version          bigint NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    finished_at      timestamptz,
    PRIMARY KEY (workspace_id, id)
);

CREATE INDEX jobs_due ON jobs (workspace_id, kind, run_at) WHERE status IN ('queued', 'running');
CREATE INDEX jobs_created ON jobs (workspace_id, created_at DESC, id DESC);
CREATE INDEX jobs_sha256 ON jobs (workspace_id, sha256) WHERE sha256 <> '';
CREATE INDEX jobs_source_url ON jobs (workspace_id, source_url) WHERE source_url <> '';

-- The event log. The writes that change entities insert their events in
-- their own transaction, with seq NULL; a reader first sequences the
-- committed events (under a transaction-scoped advisory lock, numbering them
-- after the workspace's highest seq in insertion order) and then reads by
-- seq, so seqs become visible in increasing order and a reader that
-- follows seq never skips an event whose transaction committed late.
CREATE TABLE events (
    workspace_id text NOT NULL,
    id           bigint GENERATED ALWAYS AS IDENTITY,
    seq          bigint,
    kind         text NOT NULL,
    entity_id    uuid,
    job_id       uuid,
    type         text NOT NULL DEFAULT '',
    visibility   text NOT NULL DEFAULT '',
    owner        text NOT NULL DEFAULT '',
    role         text NOT NULL DEFAULT '',
    client_id    text NOT NULL DEFAULT '',
    key_id       text NOT NULL DEFAULT '',
    data         jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE UNIQUE INDEX events_seq ON events (workspace_id, seq) WHERE seq IS NOT NULL;
CREATE INDEX events_unsequenced ON events (workspace_id, id) WHERE seq IS NULL;
CREATE INDEX events_created ON events (workspace_id, created_at);

DO $$
DECLARE
    t text;
    app boolean := EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'postgram_app');
BEGIN
    FOREACH t IN ARRAY ARRAY['jobs', 'events'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY workspace_isolation ON %I TO PUBLIC'
            ' USING (workspace_id = current_setting(''postgram.workspace'', true))'
            ' WITH CHECK (workspace_id = current_setting(''postgram.workspace'', true))', t);
        EXECUTE format('REVOKE ALL ON %I FROM PUBLIC', t);
        IF app THEN
            EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO postgram_app', t);
        END IF;
    END LOOP;
    EXECUTE format('REVOKE ALL ON SEQUENCE %s FROM PUBLIC', pg_get_serial_sequence('events', 'id'));
    IF app THEN
        EXECUTE format('GRANT USAGE, SELECT ON SEQUENCE %s TO postgram_app', pg_get_serial_sequence('events', 'id'));
    END IF;
END
$$;
