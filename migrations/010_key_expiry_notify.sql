-- API keys: an optional expiry (key create --expires-in, key rotate), and a
-- notification whenever a key is changed (other than its last use) or
-- removed, however that happens: through the library, pgm-admin sql or
-- psql. Every running server listens on the channel postgram_keys and drops
-- its cache of verified keys, so a key revoked, narrowed or deleted by SQL
-- is refused on the next request everywhere. The payload is
-- "key:<schema>:<workspace>:<key id>", or "key:<schema>:*" after TRUNCATE:
-- installations in other schemas of the same database ignore it.

ALTER TABLE api_keys ADD COLUMN expires_at timestamptz;

CREATE FUNCTION postgram_api_keys_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('postgram_keys', 'key:' || TG_TABLE_SCHEMA || ':*');
        RETURN NULL;
    END IF;
    PERFORM pg_notify('postgram_keys', 'key:' || TG_TABLE_SCHEMA || ':' || OLD.workspace_id || ':' || OLD.id::text);
    IF TG_OP = 'UPDATE' AND (NEW.workspace_id, NEW.id) IS DISTINCT FROM (OLD.workspace_id, OLD.id) THEN
        PERFORM pg_notify('postgram_keys', 'key:' || TG_TABLE_SCHEMA || ':' || NEW.workspace_id || ':' || NEW.id::text);
    END IF;
    RETURN NULL;
END
$$;

-- last_used_at is left out: recording use must not flush every cache.
CREATE TRIGGER api_keys_notify_change
    AFTER UPDATE OF workspace_id, id, name, prefix, key_hash, scopes, allowed_types, allowed_visibilities,
        client_id, created_at, revoked_at, expires_at OR DELETE
    ON api_keys FOR EACH ROW EXECUTE FUNCTION postgram_api_keys_notify();

CREATE TRIGGER api_keys_notify_truncate
    AFTER TRUNCATE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION postgram_api_keys_notify();
