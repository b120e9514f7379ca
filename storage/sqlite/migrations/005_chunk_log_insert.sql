-- The keyword index (keywords.go) is held in memory beside the vector
-- index and follows change_log like it: a new chunk must be logged as well
-- as a deleted one, so that every process indexes it before its next
-- search (kind 2 names a chunk rid whose chunk or embedding changed).
CREATE TRIGGER chunks_log_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO change_log (kind, rid) VALUES (2, NEW.rid);
END;
