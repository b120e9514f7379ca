-- Knowledge graph provenance and the extraction queue (issue 5).
--
-- Every derived edge records where it came from: origin_id is the entity
-- whose content (or embeddings) produced it, provider/model/prompt_version
-- the LLM and prompt that did (empty for manual and semantic-neighbor
-- edges). Re-extracting or deleting an origin retracts exactly the edges
-- with that origin and source; manual edges carry no origin.
ALTER TABLE edges
    ADD COLUMN origin_id       uuid,
    ADD COLUMN provider        text NOT NULL DEFAULT '',
    ADD COLUMN model           text NOT NULL DEFAULT '',
    ADD COLUMN prompt_version  text NOT NULL DEFAULT '',
    ADD COLUMN updated_at      timestamptz NOT NULL DEFAULT now(),
    ADD FOREIGN KEY (workspace_id, origin_id) REFERENCES entities (workspace_id, id) ON DELETE CASCADE;
CREATE INDEX edges_origin ON edges (workspace_id, origin_id, source) WHERE origin_id IS NOT NULL;
CREATE INDEX edges_source_confidence ON edges (workspace_id, source, confidence);

-- The extraction queue: like enrichment, with a lease and a retry time, and
-- a per-entity provider/model override (pgm-admin improve-graph) that the
-- worker uses instead of the configured default and clears on success.
ALTER TABLE entities
    ADD COLUMN extraction_queued_at     timestamptz,
    ADD COLUMN extraction_retry_at      timestamptz,
    ADD COLUMN extraction_leased_until  timestamptz,
    ADD COLUMN extraction_provider      text NOT NULL DEFAULT '',
    ADD COLUMN extraction_model         text NOT NULL DEFAULT '';
CREATE INDEX entities_extraction_queue ON entities (workspace_id, extraction_queued_at)
    WHERE extraction_status IN ('pending', 'failed');
