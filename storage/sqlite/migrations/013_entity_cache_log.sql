-- The entity cache (entcache.go) follows change_log like the index. The
-- index's entries (kind 1) cover only the columns it holds; a change of
-- any other column is logged as kind 4, which drops the entity from the
-- cache and nothing else (the enrichment and extraction workers update
-- their status columns, an edit the content and version).
CREATE TRIGGER entities_log_cached
AFTER UPDATE OF content, source, version, enrichment_status, enrichment_attempts, enrichment_error,
    extraction_status, extraction_attempts, extraction_error, created_at ON entities BEGIN
    INSERT INTO change_log (kind, rid) VALUES (4, NEW.rid);
END;
