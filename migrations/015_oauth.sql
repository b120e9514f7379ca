-- The OAuth authorization server's state (package oauth), store-wide like
-- the web-app users: registered clients, authorization codes, grants and
-- refresh tokens, each a JSON document under (kind, id). Codes and refresh
-- tokens are keyed by their SHA-256, never stored in the clear. version
-- makes updates compare-and-set (a code or refresh token is used once).
CREATE TABLE oauth_records (
    kind       text NOT NULL CHECK (kind <> ''),
    id         text NOT NULL CHECK (id <> ''),
    data       jsonb NOT NULL,
    version    bigint NOT NULL,
    expires_at timestamptz,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (kind, id)
);

CREATE INDEX oauth_records_expiry ON oauth_records (expires_at) WHERE expires_at IS NOT NULL;

REVOKE ALL ON oauth_records FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'postgram_app') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON oauth_records TO postgram_app;
    END IF;
END
$$;
