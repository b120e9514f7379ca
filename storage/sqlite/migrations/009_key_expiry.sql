-- API keys: an optional expiry (key create --expires-in, key rotate). The
-- change-log trigger of 007 is recreated so that a changed expiry, like any
-- other change to a key but its last use, clears every process's cache of
-- verified keys.
ALTER TABLE api_keys ADD COLUMN expires_at INTEGER;

DROP TRIGGER api_keys_log_update;
CREATE TRIGGER api_keys_log_update
AFTER UPDATE OF workspace_id, id, name, prefix, key_hash, scopes, allowed_types, allowed_visibilities, client_id,
    created_at, revoked_at, expires_at ON api_keys BEGIN
    INSERT INTO change_log (kind, rid) VALUES (3, -OLD.rowid);
END;
