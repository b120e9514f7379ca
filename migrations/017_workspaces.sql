-- The workspace directory: one server serves every workspace of the
-- database (package workspaces), finding a request's workspace from its API
-- key. pgm-admin workspace create adds a name; creating a key adds its
-- workspace too; pgm-admin workspace delete removes it with everything in
-- it. The workspaces that already hold rows are entered here.
--
-- Every role may read the directory (the server lists it to start each
-- workspace's worker) but may add or remove only the workspace its
-- connection is set to, like every other workspace table. The key lookup
-- runs before any workspace is known: postgram_key_workspace, a SECURITY
-- DEFINER function of the owner with a pinned search_path, answers only
-- "which workspace holds this digest" and nothing else.
CREATE TABLE workspaces (
    workspace_id text PRIMARY KEY,
    created_at   timestamptz NOT NULL
);

INSERT INTO workspaces (workspace_id, created_at)
SELECT workspace_id, min(at) FROM (
    SELECT workspace_id, created_at AS at FROM entities
    UNION ALL SELECT workspace_id, created_at FROM api_keys
    UNION ALL SELECT workspace_id, at FROM audit_log
) w GROUP BY workspace_id
ON CONFLICT DO NOTHING;

CREATE INDEX api_keys_key_hash ON api_keys (key_hash);

CREATE FUNCTION postgram_key_workspace(digest bytea) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT CASE WHEN count(*) = 1 THEN min(workspace_id) END FROM api_keys WHERE key_hash = digest
$$;

ALTER TABLE workspaces ENABLE ROW LEVEL SECURITY;
CREATE POLICY workspace_directory ON workspaces FOR SELECT TO PUBLIC USING (true);
CREATE POLICY workspace_isolation ON workspaces TO PUBLIC
    USING (workspace_id = current_setting('postgram.workspace', true))
    WITH CHECK (workspace_id = current_setting('postgram.workspace', true));

REVOKE ALL ON workspaces FROM PUBLIC;
REVOKE ALL ON FUNCTION postgram_key_workspace(bytea) FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'postgram_app') THEN
        GRANT SELECT, INSERT, DELETE ON workspaces TO postgram_app;
        GRANT EXECUTE ON FUNCTION postgram_key_workspace(bytea) TO postgram_app;
    END IF;
END
$$;
