-- Knowledge graph provenance and the extraction queue (issue 5); the same
-- columns as migrations/005_graph.sql at the module root.
ALTER TABLE edges ADD COLUMN origin_id TEXT;
ALTER TABLE edges ADD COLUMN provider TEXT NOT NULL DEFAULT '';
ALTER TABLE edges ADD COLUMN model TEXT NOT NULL DEFAULT '';
ALTER TABLE edges ADD COLUMN prompt_version TEXT NOT NULL DEFAULT '';
ALTER TABLE edges ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX edges_origin ON edges (workspace_id, origin_id, source) WHERE origin_id IS NOT NULL;
CREATE INDEX edges_source_confidence ON edges (workspace_id, source, confidence);
-- Derived edges go with their origin when it is purged (PostgreSQL does it
-- with a foreign key, which SQLite cannot add to an existing table).
CREATE TRIGGER entities_edges_origin_delete AFTER DELETE ON entities BEGIN
    DELETE FROM edges WHERE workspace_id = OLD.workspace_id AND origin_id = OLD.id;
END;

ALTER TABLE entities ADD COLUMN extraction_queued_at INTEGER;
ALTER TABLE entities ADD COLUMN extraction_retry_at INTEGER;
ALTER TABLE entities ADD COLUMN extraction_leased_until INTEGER;
ALTER TABLE entities ADD COLUMN extraction_provider TEXT NOT NULL DEFAULT '';
ALTER TABLE entities ADD COLUMN extraction_model TEXT NOT NULL DEFAULT '';
CREATE INDEX entities_extraction_queue ON entities (workspace_id, extraction_queued_at)
    WHERE extraction_status IN ('pending', 'failed');
