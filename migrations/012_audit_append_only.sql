-- The audit log is append-only: UPDATE, DELETE and TRUNCATE of audit_log
-- are refused, by the library's connections and by anyone with SQL access
-- (pgm-admin sql, psql) alike. The one way to remove entries is the
-- retention command (pgm-admin audit prune --before DATE, the library's
-- PruneAudit): its transaction sets postgram.audit_prune locally, deletes
-- the entries older than the cut-off and records the prune itself in the
-- log, all at once.

CREATE FUNCTION postgram_audit_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('postgram.audit_prune', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit_log is append-only: % is refused; remove old entries with pgm-admin audit prune --before DATE', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER audit_log_append_only
    BEFORE UPDATE OR DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION postgram_audit_log_append_only();

CREATE TRIGGER audit_log_no_truncate
    BEFORE TRUNCATE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION postgram_audit_log_append_only();
