-- The in-process search index (Config.MemoryIndex) now also keeps every
-- edge's endpoints and relation, so that a search counts its results'
-- edges (the summaries each result carries) without a statement per
-- search. So search_changes must also name both endpoints of every edge
-- that appears, goes or changes its endpoints or relation: kind 4 (read
-- this entity's edges again). An entity's delete cascades to its edges,
-- whose deletes log their endpoints too.

ALTER TABLE search_changes DROP CONSTRAINT search_changes_kind_check;
ALTER TABLE search_changes ADD CONSTRAINT search_changes_kind_check CHECK (kind IN (0, 1, 2, 3, 4));

CREATE FUNCTION postgram_edges_search_change() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        INSERT INTO search_changes (workspace_id, kind, entity_id)
        VALUES (OLD.workspace_id, 4, OLD.source_id), (OLD.workspace_id, 4, OLD.target_id);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO search_changes (workspace_id, kind, entity_id)
        VALUES (NEW.workspace_id, 4, NEW.source_id), (NEW.workspace_id, 4, NEW.target_id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER postgram_edges_search_insert AFTER INSERT OR DELETE ON edges
    FOR EACH ROW EXECUTE FUNCTION postgram_edges_search_change();
CREATE TRIGGER postgram_edges_search_update AFTER UPDATE ON edges
    FOR EACH ROW WHEN (OLD.source_id IS DISTINCT FROM NEW.source_id OR OLD.target_id IS DISTINCT FROM NEW.target_id
        OR OLD.relation IS DISTINCT FROM NEW.relation OR OLD.workspace_id IS DISTINCT FROM NEW.workspace_id)
    EXECUTE FUNCTION postgram_edges_search_change();

DO $$
BEGIN
    REVOKE ALL ON FUNCTION postgram_edges_search_change() FROM PUBLIC;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'postgram_app') THEN
        GRANT EXECUTE ON FUNCTION postgram_edges_search_change() TO postgram_app;
    END IF;
END
$$;
