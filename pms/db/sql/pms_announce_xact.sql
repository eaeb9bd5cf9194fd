-- pms_announce_xact
--
-- A commit whose answer is lost can be resolved: raises the NOTICE
-- `pms-xact <transaction id> <server start>` as the prelude of a unit of work's first message,
-- so a fresh connection can ask pg_xact_status about it, on the same server only: the server
-- start (pg_postmaster_start_time, microseconds since the epoch) tells a promoted standby or
-- a restarted server, where the id may be another transaction's, from the one that ran it.
-- Reads no table.
-- Reference: none (PostgreSQL only); caller: pms.db.commit_outcome.
-- Test: tests/ops/test_commit_outcome.py.
--
-- Applied by pms.db.function_files (CREATE OR REPLACE, its sha256 recorded in stored_function);
-- a change edits this file and adds a migration that applies it again. It runs with the
-- caller's rights, under row-level security; plan_cache_mode keeps one generic plan per server
-- connection (PgBouncer-safe, unlike SQL PREPARE).

CREATE OR REPLACE FUNCTION pms_announce_xact()
 RETURNS void
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
BEGIN
    RAISE NOTICE USING MESSAGE = 'pms-xact ' || pg_current_xact_id()::text || ' '
        || (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint::text;
END
$function$;
