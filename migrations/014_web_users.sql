-- Web-app users and their sessions (store-wide, not per workspace). A
-- user's password is kept as an argon2id hash; a session as the SHA-256 of
-- its cookie token. totp_secret is the base32 secret of the user's second
-- factor ('' when off); recovery holds the SHA-256 of its unused recovery
-- codes.
CREATE TABLE web_users (
    id            uuid PRIMARY KEY,
    name          text NOT NULL UNIQUE,
    password_hash text NOT NULL,
    role          text NOT NULL CHECK (role IN ('admin', 'member')),
    key_id        text NOT NULL DEFAULT '',
    totp_secret   text NOT NULL DEFAULT '',
    recovery      text[] NOT NULL DEFAULT '{}',
    failed_logins integer NOT NULL DEFAULT 0,
    locked_until  timestamptz,
    last_login_at timestamptz,
    created_at    timestamptz NOT NULL
);

CREATE TABLE web_sessions (
    token_hash text PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES web_users (id) ON DELETE CASCADE,
    csrf       text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);

CREATE INDEX web_sessions_user ON web_sessions (user_id);

REVOKE ALL ON web_users, web_sessions FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'postgram_app') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON web_users, web_sessions TO postgram_app;
    END IF;
END
$$;
