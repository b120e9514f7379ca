-- The OAuth authorization server's state (package oauth), store-wide like
-- the web-app users: registered clients, authorization codes, grants and
-- refresh tokens, each a JSON document under (kind, id). Codes and refresh
-- tokens are keyed by their SHA-256, never stored in the clear. version
-- makes updates compare-and-set (a code or refresh token is used once).
CREATE TABLE oauth_records (
    kind       TEXT NOT NULL CHECK (kind <> ''),
    id         TEXT NOT NULL CHECK (id <> ''),
    data       TEXT NOT NULL,
    version    INTEGER NOT NULL,
    expires_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (kind, id)
) STRICT;

CREATE INDEX oauth_records_expiry ON oauth_records (expires_at) WHERE expires_at IS NOT NULL;
