-- The in-process search index (storage/postgres/memindex.go,
-- Config.MemoryIndex) now also holds the keyword side: every chunk's
-- content and tsvector and every entity's head. So search_changes must name
-- every chunk that appears, goes or changes its text (not only those with a
-- vector, as in migration 020), and every entity whose head changes (the
-- background head fill, ranking.go's fillHeads, sets it without touching
-- updated_at).

DROP TRIGGER postgram_chunks_search_insert ON chunks;
DROP TRIGGER postgram_chunks_search_delete ON chunks;
DROP TRIGGER postgram_chunks_search_update ON chunks;

CREATE TRIGGER postgram_chunks_search_insert AFTER INSERT OR DELETE ON chunks
    FOR EACH ROW EXECUTE FUNCTION postgram_chunks_search_change();
CREATE TRIGGER postgram_chunks_search_update AFTER UPDATE ON chunks
    FOR EACH ROW WHEN (OLD.embedding IS DISTINCT FROM NEW.embedding OR OLD.model_id IS DISTINCT FROM NEW.model_id
        OR OLD.entity_id IS DISTINCT FROM NEW.entity_id OR OLD.content IS DISTINCT FROM NEW.content
        OR OLD.tsv IS DISTINCT FROM NEW.tsv)
    EXECUTE FUNCTION postgram_chunks_search_change();

DROP TRIGGER postgram_entities_search_update ON entities;
CREATE TRIGGER postgram_entities_search_update AFTER UPDATE ON entities
    FOR EACH ROW WHEN (OLD.type IS DISTINCT FROM NEW.type OR OLD.status IS DISTINCT FROM NEW.status
        OR OLD.visibility IS DISTINCT FROM NEW.visibility OR OLD.owner IS DISTINCT FROM NEW.owner
        OR OLD.tags IS DISTINCT FROM NEW.tags OR OLD.memory_role IS DISTINCT FROM NEW.memory_role
        OR OLD.client_id IS DISTINCT FROM NEW.client_id OR OLD.updated_at IS DISTINCT FROM NEW.updated_at
        OR OLD.head IS DISTINCT FROM NEW.head)
    EXECUTE FUNCTION postgram_entities_search_change();

-- A catch-up reads one workspace's rows of transactions at or above its
-- last snapshot's xmax, or among its in-progress ones: a range and a few
-- points on (workspace_id, xid). With the xid index alone the planner
-- scanned every row of the workspace (2.4 ms at 6,000 rows, on every
-- search).
CREATE INDEX search_changes_ws_xid ON search_changes (workspace_id, xid);
