-- The in-process search index (Config.MemoryIndex) now also keeps the
-- entities searches return, so that a search does not read its results'
-- rows again each time. So search_changes must also name every entity
-- whose row changes in a column a read returns (content, metadata, the
-- worker's status columns, ...), not only in those a filter reads: such a
-- change logs kind 3 (drop the entity's cached row), one of the filter
-- attributes or the head still logs kind 1 (read them again, which also
-- drops the cached row). The trigger keeps its name and function; only the
-- condition widens and the function picks the kind. The lease columns
-- (enrichment_leased_until, extraction_leased_until), which no read
-- returns, change on every claim and are left out.

ALTER TABLE search_changes DROP CONSTRAINT search_changes_kind_check;
ALTER TABLE search_changes ADD CONSTRAINT search_changes_kind_check CHECK (kind IN (0, 1, 2, 3));

CREATE OR REPLACE FUNCTION postgram_entities_search_change() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO search_changes (workspace_id, kind, entity_id) VALUES (OLD.workspace_id, 1, OLD.id);
    ELSIF TG_OP = 'UPDATE' AND NOT (OLD.type IS DISTINCT FROM NEW.type OR OLD.status IS DISTINCT FROM NEW.status
        OR OLD.visibility IS DISTINCT FROM NEW.visibility OR OLD.owner IS DISTINCT FROM NEW.owner
        OR OLD.tags IS DISTINCT FROM NEW.tags OR OLD.memory_role IS DISTINCT FROM NEW.memory_role
        OR OLD.client_id IS DISTINCT FROM NEW.client_id OR OLD.updated_at IS DISTINCT FROM NEW.updated_at
        OR OLD.head IS DISTINCT FROM NEW.head) THEN
        INSERT INTO search_changes (workspace_id, kind, entity_id) VALUES (NEW.workspace_id, 3, NEW.id);
    ELSE
        INSERT INTO search_changes (workspace_id, kind, entity_id) VALUES (NEW.workspace_id, 1, NEW.id);
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER postgram_entities_search_update ON entities;
CREATE TRIGGER postgram_entities_search_update AFTER UPDATE ON entities
    FOR EACH ROW WHEN (OLD.type IS DISTINCT FROM NEW.type OR OLD.status IS DISTINCT FROM NEW.status
        OR OLD.visibility IS DISTINCT FROM NEW.visibility OR OLD.owner IS DISTINCT FROM NEW.owner
        OR OLD.tags IS DISTINCT FROM NEW.tags OR OLD.memory_role IS DISTINCT FROM NEW.memory_role
        OR OLD.client_id IS DISTINCT FROM NEW.client_id OR OLD.updated_at IS DISTINCT FROM NEW.updated_at
        OR OLD.head IS DISTINCT FROM NEW.head
        OR OLD.content IS DISTINCT FROM NEW.content OR OLD.source IS DISTINCT FROM NEW.source
        OR OLD.metadata IS DISTINCT FROM NEW.metadata OR OLD.version IS DISTINCT FROM NEW.version
        OR OLD.created_at IS DISTINCT FROM NEW.created_at
        OR OLD.enrichment_status IS DISTINCT FROM NEW.enrichment_status
        OR OLD.enrichment_attempts IS DISTINCT FROM NEW.enrichment_attempts
        OR OLD.enrichment_error IS DISTINCT FROM NEW.enrichment_error
        OR OLD.extraction_status IS DISTINCT FROM NEW.extraction_status
        OR OLD.extraction_attempts IS DISTINCT FROM NEW.extraction_attempts
        OR OLD.extraction_error IS DISTINCT FROM NEW.extraction_error)
    EXECUTE FUNCTION postgram_entities_search_change();
