-- pms_profile_refs
--
-- A guest profile is unique per env by its email, else its external reference: the profile
-- create's one read (does the property exist, and the profile with the email first, else with
-- the external reference).
-- Reference: pms.services.profiles.profiles._find_existing (and the SQLite text of `_REFS`);
-- caller: pms.services.profiles.profiles._property_and_existing.
-- Test: tests/services/test_profile_refs_equivalence.py.
--
-- Applied by pms.db.function_files (CREATE OR REPLACE, its sha256 recorded in stored_function);
-- a change edits this file and adds a migration that applies it again. It runs with the
-- caller's rights, under row-level security; plan_cache_mode keeps one generic plan per server
-- connection (PgBouncer-safe, unlike SQL PREPARE).

CREATE OR REPLACE FUNCTION pms_profile_refs(in_env uuid, in_property uuid, in_email text, in_ref text)
 RETURNS TABLE(property_found boolean, pr_row profile)
 LANGUAGE plpgsql
 STABLE
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
    hit profile;  -- the table's row type
BEGIN
    IF in_email IS NOT NULL THEN
        SELECT * INTO hit FROM profile f
         WHERE f.env_id = in_env AND f.email_normalized = in_email;
    END IF;
    IF hit.id IS NULL AND in_ref IS NOT NULL THEN
        SELECT * INTO hit FROM profile f
         WHERE f.env_id = in_env AND f.external_ref = in_ref;
    END IF;
    RETURN QUERY
    SELECT EXISTS (SELECT 1 FROM property p WHERE p.env_id = in_env AND p.id = in_property), hit;
END
$function$;
