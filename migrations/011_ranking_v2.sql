-- Ranking v2 (internal/rank) scores keyword evidence with BM25 over the
-- workspace's corpus statistics and weighs an entity's head (its name
-- fields, rank.Head) above body text.
--
-- Corpus statistics. lexeme_stats holds, per workspace and lexeme, how many
-- chunks hold the lexeme and its positions in them; the row whose lexeme is
-- '' (never a lexeme) holds the workspace's chunk count and total length in
-- positions. Triggers on chunks do not update it (every writer would queue
-- on the rows of common lexemes, and a row per lexeme per write doubled the
-- cost of a write): each inserted or deleted chunk appends one row to
-- lexeme_stats_delta with a copy of its tsvector and a sign. A reader adds
-- to the folded counts the signs of the pending rows whose tsvector matches
-- each lexeme (a binary search per row), all in one snapshot, so the
-- statistics are current as of its statement. The store folds the pending
-- rows into lexeme_stats in the background (one folder at a time, under an
-- advisory lock; a reader sees a fold entirely or not at all), which keeps
-- the pending rows few.
CREATE TABLE lexeme_stats (
    workspace_id text NOT NULL,
    lexeme       text NOT NULL,
    chunks       bigint NOT NULL,
    positions    bigint NOT NULL,
    PRIMARY KEY (workspace_id, lexeme)
);

CREATE TABLE lexeme_stats_delta (
    workspace_id text NOT NULL,
    sign         smallint NOT NULL, -- +1: the chunk was inserted, -1: deleted
    positions    integer NOT NULL,  -- the chunk's length in positions
    tsv          tsvector NOT NULL
) WITH (toast_tuple_target = 8160);
-- Kept inline and uncompressed where it fits: read for every search.
ALTER TABLE lexeme_stats_delta ALTER COLUMN tsv SET STORAGE MAIN;

CREATE FUNCTION postgram_chunks_stats_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lexeme_stats_delta (workspace_id, sign, positions, tsv)
    SELECT n.workspace_id, 1, (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(n.tsv) u), n.tsv
    FROM postgram_new_chunks n;
    RETURN NULL;
END
$$;

CREATE FUNCTION postgram_chunks_stats_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lexeme_stats_delta (workspace_id, sign, positions, tsv)
    SELECT o.workspace_id, -1, (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(o.tsv) u), o.tsv
    FROM postgram_old_chunks o;
    RETURN NULL;
END
$$;

-- The library never changes a chunk's text in place (it replaces the
-- entity's chunks), but SQL may: a row-level trigger keeps the statistics
-- right then, and does not fire for embedding updates.
CREATE FUNCTION postgram_chunks_stats_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lexeme_stats_delta (workspace_id, sign, positions, tsv)
    VALUES (OLD.workspace_id, -1, (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(OLD.tsv) u), OLD.tsv),
        (NEW.workspace_id, 1, (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(NEW.tsv) u), NEW.tsv);
    RETURN NULL;
END
$$;

-- A fold running meanwhile would write back what it took from the delta
-- after these deletes: wait for it (the folders' advisory lock).
CREATE FUNCTION postgram_chunks_stats_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext(current_schema() || '.postgram_lexeme_fold'));
    DELETE FROM lexeme_stats;
    DELETE FROM lexeme_stats_delta;
    RETURN NULL;
END
$$;

CREATE TRIGGER chunks_stats_insert AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS postgram_new_chunks
    FOR EACH STATEMENT EXECUTE FUNCTION postgram_chunks_stats_insert();
CREATE TRIGGER chunks_stats_delete AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS postgram_old_chunks
    FOR EACH STATEMENT EXECUTE FUNCTION postgram_chunks_stats_delete();
CREATE TRIGGER chunks_stats_update AFTER UPDATE OF workspace_id, content ON chunks
    FOR EACH ROW WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id OR OLD.tsv IS DISTINCT FROM NEW.tsv)
    EXECUTE FUNCTION postgram_chunks_stats_update();
CREATE TRIGGER chunks_stats_truncate AFTER TRUNCATE ON chunks
    FOR EACH STATEMENT EXECUTE FUNCTION postgram_chunks_stats_truncate();

-- The statistics of the chunks already stored.
INSERT INTO lexeme_stats (workspace_id, lexeme, chunks, positions)
SELECT c.workspace_id, u.lexeme, count(*), sum(cardinality(u.positions))
FROM chunks c, unnest(c.tsv) u
GROUP BY c.workspace_id, u.lexeme;
INSERT INTO lexeme_stats (workspace_id, lexeme, chunks, positions)
SELECT c.workspace_id, '', count(*),
    coalesce(sum((SELECT sum(cardinality(u.positions)) FROM unnest(c.tsv) u)), 0)
FROM chunks c
GROUP BY c.workspace_id;

-- Heads. An entity's head is its name fields as ranking v2 reads them
-- (rank.Head, computed by the library from the content and metadata), as a
-- tsvector of the 'simple' configuration like chunks.tsv. NULL means not
-- computed yet: the store fills those at start (Migrate) and on every
-- write. The GIN index finds the entities whose name holds a query term.
ALTER TABLE entities ADD COLUMN head tsvector;
CREATE INDEX entities_head ON entities USING gin (head);
