-- pms_lock_live_keys
--
-- Check-out's lock of the stay's live digital keys (INACTIVE and ACTIVE, every one the
-- check-out revokes), in the keys' order (created_at, id), after the stay's, room's and
-- folios' locks (check-out calls it in its locked read's select list); returns how many.
-- VOLATILE: its statement reads on a snapshot taken when it runs, after the stay's lock, so a
-- key an issue committed while the check-out waited for that lock is counted and revoked.
-- Reference: pms.services.keys.key_store.locked_live (the SQLite path and the count 0 answer).
-- Tests: tests/services/test_stay_reads.py (the count, the locks, and the key committed during
-- the lock wait, with its control: a plain subquery misses it).
--
-- Applied by pms.db.function_files (CREATE OR REPLACE, its sha256 recorded in stored_function);
-- a change edits this file and adds a migration that applies it again. It runs with the
-- caller's rights, under row-level security; plan_cache_mode keeps one generic plan per server
-- connection (PgBouncer-safe, unlike SQL PREPARE).

CREATE OR REPLACE FUNCTION pms_lock_live_keys(in_env uuid, in_stay uuid)
 RETURNS integer
 LANGUAGE plpgsql
 VOLATILE
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
    locked integer;
BEGIN
    PERFORM 1 FROM digital_key
     WHERE env_id = in_env AND reservation_id = in_stay AND status IN ('INACTIVE', 'ACTIVE')
     ORDER BY created_at, id FOR UPDATE;
    GET DIAGNOSTICS locked = ROW_COUNT;
    RETURN locked;
END
$function$;
