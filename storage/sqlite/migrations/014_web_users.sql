-- Web-app users and their sessions (store-wide, not per workspace). A
-- user's password is kept as an argon2id hash; a session as the SHA-256 of
-- its cookie token. totp_secret is the base32 secret of the user's second
-- factor ('' when off); recovery holds the SHA-256 of its unused recovery
-- codes.
CREATE TABLE web_users (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    key_id        TEXT NOT NULL DEFAULT '',
    totp_secret   TEXT NOT NULL DEFAULT '',
    recovery      TEXT NOT NULL DEFAULT '[]',
    failed_logins INTEGER NOT NULL DEFAULT 0,
    locked_until  INTEGER,
    last_login_at INTEGER,
    created_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE web_sessions (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES web_users (id) ON DELETE CASCADE,
    csrf       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;

CREATE INDEX web_sessions_user ON web_sessions (user_id);
