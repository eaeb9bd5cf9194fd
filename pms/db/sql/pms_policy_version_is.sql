-- pms_policy_version_is
--
-- A request is decided on the env's current policies: the policy gate's check that rides the
-- request's first statement. Returns nothing while the env's policy_version row says
-- `p_version` (0 when there is none), else raises SQLSTATE PMC01 (the gate decides again).
-- Reference: the SQLite path of pms.services.admin.policies (the version read in process);
-- caller: pms.db.database check_first.
-- Test: tests/api/test_policy_freshness.py.
--
-- Applied by pms.db.function_files (CREATE OR REPLACE, its sha256 recorded in stored_function);
-- a change edits this file and adds a migration that applies it again. It runs with the
-- caller's rights, under row-level security; plan_cache_mode keeps one generic plan per server
-- connection (PgBouncer-safe, unlike SQL PREPARE).

CREATE OR REPLACE FUNCTION pms_policy_version_is(p_version integer)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
    found integer;
BEGIN
    SELECT version INTO found FROM policy_version
    WHERE env_id = nullif(current_setting('app.env_id', true), '')::uuid
      AND id = nullif(current_setting('app.env_id', true), '')::uuid;
    IF coalesce(found, 0) <> p_version THEN
        RAISE EXCEPTION 'the env''s policies moved on from the cached version'
            USING ERRCODE = 'PMC01';
    END IF;
END
$function$;
