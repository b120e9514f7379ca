-- search_changes logs, through triggers, every change an in-process copy of
-- a workspace's vectors must follow (storage/postgres/memvec.go,
-- Config.MemoryVectors): an entity whose filter attributes changed or that
-- was deleted (kind 1), a chunk whose embedding appeared, changed or went
-- away (kind 2). (Kind 0, load the workspace again, is for SQL by hand: a
-- TRUNCATE of entities or chunks fires no row trigger, and a trigger that
-- wrote every workspace's rows would not be shard-local under Citus.)
--
-- Each row carries the id of the transaction that wrote it (xid8). A
-- reader cannot follow the identity column alone: transactions commit out
-- of the order in which they drew their numbers, so a row numbered 10 may
-- become visible after one numbered 11 was read. A reader instead keeps the
-- snapshot of its last read (pg_current_snapshot()) and next reads exactly
-- the rows of transactions that snapshot did not see as finished: xid at or
-- above its xmax, or among its in-progress xids. Every row is read once.
--
-- Rows are pruned (by a store's background loop) once the transaction that
-- wrote them ended more than an hour ago; a reader that has not read for
-- half an hour loads its copy again instead.

CREATE TABLE search_changes (
    workspace_id text NOT NULL,
    id           bigint GENERATED ALWAYS AS IDENTITY,
    xid          xid8 NOT NULL DEFAULT pg_current_xact_id(),
    kind         smallint NOT NULL CHECK (kind IN (0, 1, 2)),
    entity_id    uuid,
    chunk_id     uuid,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX search_changes_xid ON search_changes (xid);

CREATE FUNCTION postgram_entities_search_change() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO search_changes (workspace_id, kind, entity_id) VALUES (OLD.workspace_id, 1, OLD.id);
    ELSE
        INSERT INTO search_changes (workspace_id, kind, entity_id) VALUES (NEW.workspace_id, 1, NEW.id);
    END IF;
    RETURN NULL;
END
$$;

-- Inserts and deletes, and updates of what a filter reads (the worker's
-- status columns and the content change nothing here: a new content brings
-- new chunks, logged below).
CREATE TRIGGER postgram_entities_search_insert AFTER INSERT OR DELETE ON entities
    FOR EACH ROW EXECUTE FUNCTION postgram_entities_search_change();
CREATE TRIGGER postgram_entities_search_update AFTER UPDATE ON entities
    FOR EACH ROW WHEN (OLD.type IS DISTINCT FROM NEW.type OR OLD.status IS DISTINCT FROM NEW.status
        OR OLD.visibility IS DISTINCT FROM NEW.visibility OR OLD.owner IS DISTINCT FROM NEW.owner
        OR OLD.tags IS DISTINCT FROM NEW.tags OR OLD.memory_role IS DISTINCT FROM NEW.memory_role
        OR OLD.client_id IS DISTINCT FROM NEW.client_id OR OLD.updated_at IS DISTINCT FROM NEW.updated_at)
    EXECUTE FUNCTION postgram_entities_search_change();

CREATE FUNCTION postgram_chunks_search_change() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO search_changes (workspace_id, kind, entity_id, chunk_id) VALUES (OLD.workspace_id, 2, OLD.entity_id, OLD.id);
    ELSE
        INSERT INTO search_changes (workspace_id, kind, entity_id, chunk_id) VALUES (NEW.workspace_id, 2, NEW.entity_id, NEW.id);
    END IF;
    RETURN NULL;
END
$$;

-- Only chunks with a vector matter: a chunk is inserted without one and
-- the embedding worker sets it later.
CREATE TRIGGER postgram_chunks_search_insert AFTER INSERT ON chunks
    FOR EACH ROW WHEN (NEW.embedding IS NOT NULL) EXECUTE FUNCTION postgram_chunks_search_change();
CREATE TRIGGER postgram_chunks_search_delete AFTER DELETE ON chunks
    FOR EACH ROW WHEN (OLD.embedding IS NOT NULL) EXECUTE FUNCTION postgram_chunks_search_change();
CREATE TRIGGER postgram_chunks_search_update AFTER UPDATE ON chunks
    FOR EACH ROW WHEN (OLD.embedding IS DISTINCT FROM NEW.embedding OR OLD.model_id IS DISTINCT FROM NEW.model_id
        OR OLD.entity_id IS DISTINCT FROM NEW.entity_id)
    EXECUTE FUNCTION postgram_chunks_search_change();

DO $$
DECLARE
    app boolean := EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'postgram_app');
    f text;
BEGIN
    ALTER TABLE search_changes ENABLE ROW LEVEL SECURITY;
    CREATE POLICY workspace_isolation ON search_changes TO PUBLIC
        USING (workspace_id = current_setting('postgram.workspace', true))
        WITH CHECK (workspace_id = current_setting('postgram.workspace', true));
    REVOKE ALL ON search_changes FROM PUBLIC;
    EXECUTE format('REVOKE ALL ON SEQUENCE %s FROM PUBLIC', pg_get_serial_sequence('search_changes', 'id'));
    FOREACH f IN ARRAY ARRAY['postgram_entities_search_change', 'postgram_chunks_search_change'] LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %I() FROM PUBLIC', f);
    END LOOP;
    IF app THEN
        GRANT SELECT, INSERT, DELETE ON search_changes TO postgram_app;
        EXECUTE format('GRANT USAGE, SELECT ON SEQUENCE %s TO postgram_app', pg_get_serial_sequence('search_changes', 'id'));
        FOREACH f IN ARRAY ARRAY['postgram_entities_search_change', 'postgram_chunks_search_change'] LOOP
            EXECUTE format('GRANT EXECUTE ON FUNCTION %I() TO postgram_app', f);
        END LOOP;
    END IF;
END
$$;
