-- API keys verified by a process are cached in memory (Store.KeysVersion):
-- any change to a key other than its last use, and any removal, is logged
-- so that every process drops its cache before its next request. The entry
-- is kind 3 with the negated rowid: a process of an older version, which
-- reads any kind but 1 as a chunk rid, finds no chunk with a negative rid.
CREATE TRIGGER api_keys_log_update
AFTER UPDATE OF workspace_id, id, name, prefix, key_hash, scopes, allowed_types, allowed_visibilities, client_id,
    created_at, revoked_at ON api_keys BEGIN
    INSERT INTO change_log (kind, rid) VALUES (3, -OLD.rowid);
END;
CREATE TRIGGER api_keys_log_delete AFTER DELETE ON api_keys BEGIN
    INSERT INTO change_log (kind, rid) VALUES (3, -OLD.rowid);
END;
