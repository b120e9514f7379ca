-- Ranking v2 weighs an entity's head (its name fields: metadata name,
-- title and aliases, the content's first heading or leading sentence, tags
-- and type; see internal/rank.Head) above body text. The head's tsvector
-- (the encoding of chunks.tsv) is kept per entity rid in a narrow table,
-- so the in-memory index loads it without reading entity rows. A change is
-- logged as an entity change (kind 1), which makes every process re-read
-- the entity. Rows are written by the store with the entity; Migrate fills
-- the heads of entities written before this migration.
CREATE TABLE entity_heads (
    rid INTEGER PRIMARY KEY,
    tsv BLOB NOT NULL
);
CREATE TRIGGER entity_heads_log_insert AFTER INSERT ON entity_heads BEGIN
    INSERT INTO change_log (kind, rid) VALUES (1, NEW.rid);
END;
CREATE TRIGGER entity_heads_log_update AFTER UPDATE ON entity_heads BEGIN
    INSERT INTO change_log (kind, rid) VALUES (1, NEW.rid);
END;
CREATE TRIGGER entities_heads_delete AFTER DELETE ON entities BEGIN
    DELETE FROM entity_heads WHERE rid = OLD.rid;
END;
