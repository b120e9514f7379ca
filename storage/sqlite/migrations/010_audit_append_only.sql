-- The audit log is append-only: UPDATE and DELETE of audit_log are
-- refused, by the library's connections and by anyone with SQL access
-- (pgm-admin sql, the sqlite3 shell) alike. The one way to remove entries
-- is the retention command (pgm-admin audit prune --before DATE, the
-- library's PruneAudit): its transaction opens the gate (a row in
-- audit_prune_gate, never committed: it is deleted before the commit, and
-- no other connection sees it meanwhile), deletes the entries older than
-- the cut-off and records the prune itself in the log.
CREATE TABLE audit_prune_gate (open INTEGER PRIMARY KEY CHECK (open = 1)) STRICT;

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only: UPDATE is refused');
END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
WHEN NOT EXISTS (SELECT 1 FROM audit_prune_gate) BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only: DELETE is refused; remove old entries with pgm-admin audit prune --before DATE');
END;
