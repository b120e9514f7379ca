-- Postgram schema, version 1.
-- Every table is keyed by workspace_id first: a workspace is a hard tenant
-- boundary and the distribution key when the database is sharded.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE embedding_models (
    id          bigserial PRIMARY KEY,
    provider    text NOT NULL,
    name        text NOT NULL,
    dimensions  integer NOT NULL CHECK (dimensions BETWEEN 1 AND 16000),
    is_active   boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (provider, name, dimensions)
);
-- At most one active model.
CREATE UNIQUE INDEX embedding_models_one_active ON embedding_models (is_active) WHERE is_active;

CREATE TABLE entities (
    workspace_id             text NOT NULL,
    id                       uuid NOT NULL,
    type                     text NOT NULL,
    content                  text NOT NULL,
    visibility               text NOT NULL,
    owner                    text NOT NULL DEFAULT '',
    status                   text NOT NULL,
    tags                     text[] NOT NULL DEFAULT '{}',
    source                   text NOT NULL DEFAULT '',
    metadata                 jsonb NOT NULL DEFAULT '{}',
    memory_role              text GENERATED ALWAYS AS (metadata ->> 'memory_role') STORED,
    client_id                text NOT NULL DEFAULT '',
    version                  bigint NOT NULL DEFAULT 1,
    chunk_generation         bigint NOT NULL DEFAULT 1,
    enrichment_status        text NOT NULL DEFAULT 'pending',
    enrichment_attempts      integer NOT NULL DEFAULT 0,
    enrichment_error         text NOT NULL DEFAULT '',
    enrichment_queued_at     timestamptz,
    enrichment_retry_at      timestamptz,
    enrichment_leased_until  timestamptz,
    extraction_status        text NOT NULL DEFAULT 'skipped',
    extraction_attempts      integer NOT NULL DEFAULT 0,
    extraction_error         text NOT NULL DEFAULT '',
    created_at               timestamptz NOT NULL,
    updated_at               timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id),
    CHECK (type IN ('memory', 'person', 'project', 'task', 'interaction', 'document')),
    CHECK (visibility IN ('personal', 'work', 'shared')),
    CHECK (status IN ('active', 'done', 'archived', 'inbox', 'next', 'waiting', 'scheduled', 'someday')),
    CHECK (enrichment_status IN ('pending', 'completed', 'failed', 'skipped')),
    CHECK (extraction_status IN ('pending', 'completed', 'failed', 'skipped'))
);

-- Listing newest first, overall and by type.
CREATE INDEX entities_created ON entities (workspace_id, created_at DESC, id DESC);
CREATE INDEX entities_type_created ON entities (workspace_id, type, created_at DESC, id DESC);
CREATE INDEX entities_tags ON entities USING gin (tags);
-- The enrichment queue: only rows with work to do are indexed.
CREATE INDEX entities_enrichment_queue ON entities (workspace_id, enrichment_queued_at)
    WHERE enrichment_status IN ('pending', 'failed');

CREATE TABLE chunks (
    workspace_id  text NOT NULL,
    id            uuid NOT NULL,
    entity_id     uuid NOT NULL,
    chunk_index   integer NOT NULL,
    content       text NOT NULL,
    start_offset  integer NOT NULL DEFAULT 0,
    end_offset    integer NOT NULL DEFAULT 0,
    -- The keyword index: PostgreSQL's "simple" configuration, so identifiers
    -- and words in any language are kept as written (lower-cased).
    tsv           tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED,
    -- Untyped so the dimension follows the active model; the HNSW index for
    -- a model is an expression index on embedding::vector(N) (see the store).
    embedding     vector,
    model_id      bigint REFERENCES embedding_models (id),
    PRIMARY KEY (workspace_id, id),
    FOREIGN KEY (workspace_id, entity_id) REFERENCES entities (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX chunks_entity ON chunks (workspace_id, entity_id, chunk_index);
CREATE INDEX chunks_tsv ON chunks USING gin (tsv);

CREATE TABLE edges (
    workspace_id  text NOT NULL,
    id            uuid NOT NULL,
    source_id     uuid NOT NULL,
    target_id     uuid NOT NULL,
    relation      text NOT NULL,
    confidence    real NOT NULL DEFAULT 1 CHECK (confidence >= 0 AND confidence <= 1),
    source        text NOT NULL DEFAULT 'manual',
    metadata      jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, id),
    UNIQUE (workspace_id, source_id, target_id, relation),
    FOREIGN KEY (workspace_id, source_id) REFERENCES entities (workspace_id, id) ON DELETE CASCADE,
    FOREIGN KEY (workspace_id, target_id) REFERENCES entities (workspace_id, id) ON DELETE CASCADE,
    CHECK (source_id <> target_id)
);
CREATE INDEX edges_target ON edges (workspace_id, target_id);

-- Persisted query-embedding cache. key is an HMAC-SHA256 (or SHA-256) of the
-- normalised query text; the text itself is never stored.
CREATE TABLE query_embeddings (
    workspace_id  text NOT NULL,
    client_id     text NOT NULL,
    model_id      bigint NOT NULL REFERENCES embedding_models (id) ON DELETE CASCADE,
    key           bytea NOT NULL,
    embedding     vector NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, client_id, model_id, key)
);
CREATE INDEX query_embeddings_lru ON query_embeddings (workspace_id, client_id, last_used_at DESC);
