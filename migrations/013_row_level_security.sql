-- Row-level security, fail-closed, and least privilege.
--
-- Every workspace-scoped table gets a policy that admits a row only when its
-- workspace_id equals the transaction's postgram.workspace setting
-- (set_config('postgram.workspace', ws, true)); a session without the
-- setting sees no rows and can write none (current_setting(..., true) is
-- NULL then, and NULL = x is never true).
--
-- The policies bind every role but the tables' owner (and superusers or
-- BYPASSRLS roles): the role postgram_app, created here NOLOGIN and
-- NOBYPASSRLS, owning nothing, with DML only, is the one meant for the
-- server (GRANT postgram_app TO my_server_login). Where the migrating role
-- cannot create roles (some managed services), the migration still
-- succeeds: policies and revocations are installed, and the grants wait
-- for an operator to create the role and grant it. The owner role that
-- runs these migrations is not forced through the policies yet (ENABLE, not
-- FORCE): the store still connects as the owner unless told otherwise, and
-- FORCE would hide every row from an owner that is not a superuser.
--
-- PUBLIC loses every privilege on this installation's tables, sequence and
-- functions (only those: the schema may be public, shared with others),
-- and the functions pin their search_path to the schema they were
-- installed in.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'postgram_app') THEN
        CREATE ROLE postgram_app NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
    END IF;
EXCEPTION
    -- Two installations migrating at once in one cluster: the other made it.
    WHEN duplicate_object OR unique_violation THEN NULL;
    -- An owner without CREATEROLE (some managed services): the operator
    -- creates the role; the grants below wait for it.
    WHEN insufficient_privilege THEN
        RAISE NOTICE 'postgram: cannot create role postgram_app (%); create it NOLOGIN NOBYPASSRLS and rerun the grants', SQLERRM;
END
$$;

DO $$
DECLARE
    t text;
    s text := quote_ident(current_schema());
    app boolean := EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'postgram_app');
BEGIN
    FOREACH t IN ARRAY ARRAY['entities', 'chunks', 'edges', 'query_embeddings', 'api_keys',
                             'audit_log', 'sync_files', 'lexeme_stats', 'lexeme_stats_delta'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY workspace_isolation ON %I TO PUBLIC'
            ' USING (workspace_id = current_setting(''postgram.workspace'', true))'
            ' WITH CHECK (workspace_id = current_setting(''postgram.workspace'', true))', t);
    END LOOP;

    -- Only this installation's own objects: the schema may be public,
    -- shared with pgvector's functions and other applications' tables.
    FOREACH t IN ARRAY ARRAY['entities', 'chunks', 'edges', 'query_embeddings', 'api_keys',
                             'audit_log', 'sync_files', 'lexeme_stats', 'lexeme_stats_delta',
                             'embedding_models', 'postgram_schema_version'] LOOP
        EXECUTE format('REVOKE ALL ON %I FROM PUBLIC', t);
        IF app THEN
            EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO postgram_app', t);
        END IF;
    END LOOP;
    REVOKE ALL ON SEQUENCE embedding_models_id_seq FROM PUBLIC;
    IF app THEN
        GRANT USAGE, SELECT ON SEQUENCE embedding_models_id_seq TO postgram_app;
    END IF;
    FOREACH t IN ARRAY ARRAY['postgram_api_keys_notify', 'postgram_chunks_stats_insert',
                             'postgram_chunks_stats_delete', 'postgram_chunks_stats_update',
                             'postgram_chunks_stats_truncate', 'postgram_audit_log_append_only'] LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %I() FROM PUBLIC', t);
        IF app THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %I() TO postgram_app', t);
        END IF;
    END LOOP;
    IF current_schema() <> 'public' THEN
        EXECUTE format('REVOKE CREATE ON SCHEMA %s FROM PUBLIC', s);
    END IF;
    IF app THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %s TO postgram_app', s);
    ELSE
        RAISE NOTICE 'postgram: role postgram_app is missing; policies installed, grants not (create the role NOLOGIN NOBYPASSRLS and grant it DML on the tables)';
    END IF;
END
$$;

-- Functions resolve names in the schema they were installed in, never in
-- one a caller put first on its search_path.
ALTER FUNCTION postgram_api_keys_notify() SET search_path FROM CURRENT;
ALTER FUNCTION postgram_chunks_stats_insert() SET search_path FROM CURRENT;
ALTER FUNCTION postgram_chunks_stats_delete() SET search_path FROM CURRENT;
ALTER FUNCTION postgram_chunks_stats_update() SET search_path FROM CURRENT;
ALTER FUNCTION postgram_chunks_stats_truncate() SET search_path FROM CURRENT;
ALTER FUNCTION postgram_audit_log_append_only() SET search_path FROM CURRENT;
