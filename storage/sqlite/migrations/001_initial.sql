-- Postgram SQLite schema, version 1: the same tables and semantics as the
-- PostgreSQL schema (migrations/001_initial.sql and 002_keys_audit.sql at the
-- module root), adapted to SQLite.
--
--   * Every table carries workspace_id and every unique key leads with it.
--     Tables that the keyword and vector indexes address by row also have an
--     explicit INTEGER PRIMARY KEY (rid), because an implicit rowid may be
--     renumbered by VACUUM.
--   * Timestamps are INTEGER microseconds since the Unix epoch, UTC, the
--     resolution of PostgreSQL's timestamptz.
--   * Arrays (tags, scopes, ...) and metadata are JSON text.
--   * Embeddings are little-endian float32 BLOBs in their own table, so that
--     scans of chunk text never read vector pages.
--   * chunks.tsv holds to_tsvector('simple', content), computed by Postgram
--     in Go (lexemes and positions, see tsv.go); chunk_fts indexes its
--     lexemes, hex-encoded, with FTS5.
--   * change_log records, through triggers, every change the in-process
--     vector index must follow, so that each process can catch up with the
--     writes of every other one.

CREATE TABLE embedding_models (
    id          INTEGER PRIMARY KEY,
    provider    TEXT NOT NULL,
    name        TEXT NOT NULL,
    dimensions  INTEGER NOT NULL CHECK (dimensions BETWEEN 1 AND 16000),
    is_active   INTEGER NOT NULL DEFAULT 0 CHECK (is_active IN (0, 1)),
    created_at  INTEGER NOT NULL,
    UNIQUE (provider, name, dimensions)
) STRICT;
-- At most one active model.
CREATE UNIQUE INDEX embedding_models_one_active ON embedding_models (is_active) WHERE is_active;

CREATE TABLE entities (
    rid                      INTEGER PRIMARY KEY,
    workspace_id             TEXT NOT NULL,
    id                       TEXT NOT NULL CHECK (length(id) = 36),
    type                     TEXT NOT NULL CHECK (type IN ('memory', 'person', 'project', 'task', 'interaction', 'document')),
    content                  TEXT NOT NULL,
    visibility               TEXT NOT NULL CHECK (visibility IN ('personal', 'work', 'shared')),
    owner                    TEXT NOT NULL DEFAULT '',
    status                   TEXT NOT NULL CHECK (status IN ('active', 'done', 'archived', 'inbox', 'next', 'waiting', 'scheduled', 'someday')),
    tags                     TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tags) AND json_type(tags) = 'array'),
    source                   TEXT NOT NULL DEFAULT '',
    metadata                 TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata) AND json_type(metadata) = 'object'),
    memory_role              TEXT GENERATED ALWAYS AS (metadata ->> '$.memory_role') STORED,
    client_id                TEXT NOT NULL DEFAULT '',
    version                  INTEGER NOT NULL DEFAULT 1,
    chunk_generation         INTEGER NOT NULL DEFAULT 1,
    enrichment_status        TEXT NOT NULL DEFAULT 'pending' CHECK (enrichment_status IN ('pending', 'completed', 'failed', 'skipped')),
    enrichment_attempts      INTEGER NOT NULL DEFAULT 0,
    enrichment_error         TEXT NOT NULL DEFAULT '',
    enrichment_queued_at     INTEGER,
    enrichment_retry_at      INTEGER,
    enrichment_leased_until  INTEGER,
    extraction_status        TEXT NOT NULL DEFAULT 'skipped' CHECK (extraction_status IN ('pending', 'completed', 'failed', 'skipped')),
    extraction_attempts      INTEGER NOT NULL DEFAULT 0,
    extraction_error         TEXT NOT NULL DEFAULT '',
    created_at               INTEGER NOT NULL,
    updated_at               INTEGER NOT NULL,
    UNIQUE (workspace_id, id)
) STRICT;
-- Listing newest first, overall and by type.
CREATE INDEX entities_created ON entities (workspace_id, created_at DESC, id DESC);
CREATE INDEX entities_type_created ON entities (workspace_id, type, created_at DESC, id DESC);
-- Covers what the in-process vector index reads of every entity (its filter
-- attributes), so loading it at open does not read entity content.
CREATE INDEX entities_filter ON entities (workspace_id, type, status, visibility, owner, memory_role, client_id, updated_at, tags, id);
-- The enrichment queue: only rows with work to do are indexed.
CREATE INDEX entities_enrichment_queue ON entities (workspace_id, enrichment_queued_at)
    WHERE enrichment_status IN ('pending', 'failed');

CREATE TABLE chunks (
    rid           INTEGER PRIMARY KEY,
    workspace_id  TEXT NOT NULL,
    id            TEXT NOT NULL CHECK (length(id) = 36),
    entity_id     TEXT NOT NULL,
    -- A copy of the entity's rid, so that joins from the keyword and vector
    -- indexes reach the entity by its primary key. The foreign key below
    -- (which cascades deletes) is the authoritative link.
    entity_rid    INTEGER NOT NULL,
    chunk_index   INTEGER NOT NULL,
    content       TEXT NOT NULL,
    start_offset  INTEGER NOT NULL DEFAULT 0,
    end_offset    INTEGER NOT NULL DEFAULT 0,
    -- to_tsvector('simple', content): lexemes with positions (tsv.go).
    tsv           BLOB NOT NULL,
    UNIQUE (workspace_id, id),
    FOREIGN KEY (workspace_id, entity_id) REFERENCES entities (workspace_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX chunks_entity ON chunks (workspace_id, entity_id, chunk_index);

-- One embedding per chunk, made by model_id: dimensions × float32,
-- little-endian. The chunk's workspace, id and entity are copied here (they
-- never change for a chunk) so the vector index loads with one sequential
-- scan of this table.
CREATE TABLE chunk_embeddings (
    chunk_rid     INTEGER PRIMARY KEY REFERENCES chunks (rid) ON DELETE CASCADE,
    workspace_id  TEXT NOT NULL,
    chunk_id      TEXT NOT NULL,
    entity_rid    INTEGER NOT NULL,
    model_id      INTEGER NOT NULL REFERENCES embedding_models (id),
    embedding     BLOB NOT NULL CHECK (length(embedding) > 0 AND length(embedding) % 4 = 0)
) STRICT;
CREATE INDEX chunk_embeddings_workspace_model ON chunk_embeddings (workspace_id, model_id);

-- The keyword index. Each row (rowid = chunks.rid) holds the token "w" + hex
-- of the workspace and, per distinct lexeme of the chunk, the token
-- hex(workspace) + "x" + hex(lexeme): MATCH compares lexemes byte for byte
-- and never crosses a workspace.
CREATE VIRTUAL TABLE chunk_fts USING fts5 (
    tokens, content = '', contentless_delete = 1, detail = none, tokenize = 'ascii'
);

-- Chunks per workspace, the denominator of keyword term frequencies.
CREATE TABLE workspace_chunks (
    workspace_id  TEXT PRIMARY KEY,
    chunks        INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TRIGGER chunks_count_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO workspace_chunks (workspace_id, chunks) VALUES (NEW.workspace_id, 1)
        ON CONFLICT (workspace_id) DO UPDATE SET chunks = chunks + 1;
END;
CREATE TRIGGER chunks_count_delete AFTER DELETE ON chunks BEGIN
    UPDATE workspace_chunks SET chunks = chunks - 1 WHERE workspace_id = OLD.workspace_id;
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM chunk_fts WHERE rowid = OLD.rid;
END;

CREATE TABLE edges (
    workspace_id  TEXT NOT NULL,
    id            TEXT NOT NULL CHECK (length(id) = 36),
    source_id     TEXT NOT NULL,
    target_id     TEXT NOT NULL,
    relation      TEXT NOT NULL,
    confidence    REAL NOT NULL DEFAULT 1 CHECK (confidence >= 0 AND confidence <= 1),
    source        TEXT NOT NULL DEFAULT 'manual',
    metadata      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
    created_at    INTEGER NOT NULL DEFAULT (CAST(unixepoch('subsec') * 1000000 AS INTEGER)),
    PRIMARY KEY (workspace_id, id),
    UNIQUE (workspace_id, source_id, target_id, relation),
    FOREIGN KEY (workspace_id, source_id) REFERENCES entities (workspace_id, id) ON DELETE CASCADE,
    FOREIGN KEY (workspace_id, target_id) REFERENCES entities (workspace_id, id) ON DELETE CASCADE,
    CHECK (source_id <> target_id)
) STRICT;
CREATE INDEX edges_target ON edges (workspace_id, target_id);

-- Persisted query-embedding cache. key is an HMAC-SHA256 (or SHA-256) of the
-- normalised query text; the text itself is never stored.
CREATE TABLE query_embeddings (
    workspace_id  TEXT NOT NULL,
    client_id     TEXT NOT NULL,
    model_id      INTEGER NOT NULL REFERENCES embedding_models (id) ON DELETE CASCADE,
    key           BLOB NOT NULL,
    embedding     BLOB NOT NULL,
    created_at    INTEGER NOT NULL,
    last_used_at  INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, client_id, model_id, key)
) STRICT;
CREATE INDEX query_embeddings_lru ON query_embeddings (workspace_id, client_id, last_used_at DESC);

CREATE TABLE api_keys (
    workspace_id          TEXT NOT NULL,
    id                    TEXT NOT NULL CHECK (length(id) = 36),
    name                  TEXT NOT NULL,
    prefix                TEXT NOT NULL,
    -- HMAC-SHA256 (with the server's pepper) or SHA-256 of the whole key.
    -- The key itself is never stored.
    key_hash              BLOB NOT NULL,
    scopes                TEXT NOT NULL CHECK (json_valid(scopes)),
    allowed_types         TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(allowed_types)),
    allowed_visibilities  TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(allowed_visibilities)),
    client_id             TEXT NOT NULL,
    created_at            INTEGER NOT NULL,
    revoked_at            INTEGER,
    last_used_at          INTEGER,
    PRIMARY KEY (workspace_id, id)
) STRICT;
CREATE UNIQUE INDEX api_keys_hash ON api_keys (workspace_id, key_hash);

CREATE TABLE audit_log (
    workspace_id  TEXT NOT NULL,
    id            TEXT NOT NULL CHECK (length(id) = 36),
    at            INTEGER NOT NULL,
    key_id        TEXT NOT NULL DEFAULT '',
    client_id     TEXT NOT NULL DEFAULT '',
    operation     TEXT NOT NULL,
    entity_id     TEXT NOT NULL DEFAULT '',
    details       TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(details)),
    PRIMARY KEY (workspace_id, id)
) STRICT;
CREATE INDEX audit_log_at ON audit_log (workspace_id, at DESC);
CREATE INDEX audit_log_key ON audit_log (workspace_id, key_id, at DESC);
CREATE INDEX audit_log_operation ON audit_log (workspace_id, operation, at DESC);

-- What the in-process vector index must re-read: kind 1 is an entity row
-- (its filter attributes changed, or it was inserted or deleted), kind 2 a
-- chunk row (deleted, or its embedding changed). Every process applies the
-- entries after the last one it saw; old entries are pruned, and a process
-- that finds a gap reloads its index.
CREATE TABLE change_log (
    seq   INTEGER PRIMARY KEY AUTOINCREMENT,
    kind  INTEGER NOT NULL,
    rid   INTEGER NOT NULL
) STRICT;

CREATE TRIGGER entities_log_insert AFTER INSERT ON entities BEGIN
    INSERT INTO change_log (kind, rid) VALUES (1, NEW.rid);
END;
CREATE TRIGGER entities_log_update
AFTER UPDATE OF workspace_id, id, type, visibility, owner, status, tags, metadata, client_id, updated_at ON entities BEGIN
    INSERT INTO change_log (kind, rid) VALUES (1, NEW.rid);
END;
CREATE TRIGGER entities_log_delete AFTER DELETE ON entities BEGIN
    INSERT INTO change_log (kind, rid) VALUES (1, OLD.rid);
END;
CREATE TRIGGER chunks_log_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO change_log (kind, rid) VALUES (2, OLD.rid);
END;
CREATE TRIGGER chunk_embeddings_log_insert AFTER INSERT ON chunk_embeddings BEGIN
    INSERT INTO change_log (kind, rid) VALUES (2, NEW.chunk_rid);
END;
CREATE TRIGGER chunk_embeddings_log_update AFTER UPDATE ON chunk_embeddings BEGIN
    INSERT INTO change_log (kind, rid) VALUES (2, OLD.chunk_rid);
    INSERT INTO change_log (kind, rid) VALUES (2, NEW.chunk_rid);
END;
CREATE TRIGGER chunk_embeddings_log_delete AFTER DELETE ON chunk_embeddings BEGIN
    INSERT INTO change_log (kind, rid) VALUES (2, OLD.chunk_rid);
END;
