-- API keys and the audit log.

CREATE TABLE api_keys (
    workspace_id          text NOT NULL,
    id                    uuid NOT NULL,
    name                  text NOT NULL,
    prefix                text NOT NULL,
    -- HMAC-SHA256 (with the server's pepper) or SHA-256 of the whole key.
    -- The key itself is never stored.
    key_hash              bytea NOT NULL,
    scopes                text[] NOT NULL,
    allowed_types         text[] NOT NULL DEFAULT '{}',
    allowed_visibilities  text[] NOT NULL DEFAULT '{}',
    client_id             text NOT NULL,
    created_at            timestamptz NOT NULL,
    revoked_at            timestamptz,
    last_used_at          timestamptz,
    PRIMARY KEY (workspace_id, id)
);
CREATE UNIQUE INDEX api_keys_hash ON api_keys (workspace_id, key_hash);

CREATE TABLE audit_log (
    workspace_id  text NOT NULL,
    id            uuid NOT NULL,
    at            timestamptz NOT NULL,
    key_id        text NOT NULL DEFAULT '',
    client_id     text NOT NULL DEFAULT '',
    operation     text NOT NULL,
    entity_id     text NOT NULL DEFAULT '',
    details       jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX audit_log_at ON audit_log (workspace_id, at DESC);
CREATE INDEX audit_log_key ON audit_log (workspace_id, key_id, at DESC);
CREATE INDEX audit_log_operation ON audit_log (workspace_id, operation, at DESC);
