-- Keyword search reads the in-memory keyword index (keywords.go), built
-- from chunks.tsv and kept current through change_log, so the FTS5 table
-- and the per-workspace chunk counts that served it are no longer read:
-- dropping them saves every write their upkeep.
DROP TRIGGER chunks_fts_delete;
DROP TABLE chunk_fts;
DROP TRIGGER chunks_count_insert;
DROP TRIGGER chunks_count_delete;
DROP TABLE workspace_chunks;
