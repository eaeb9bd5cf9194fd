-- pms_lock_guest_folios
--
-- Check-out's folio locks in the order every folio writer takes them: the stay's guest folio
-- (the OPEN one, else the latest) FOR UPDATE, then its other OPEN folios in id order; returns the
-- guest folio's id (NULL when the stay has none), fed to pms_folio_state.
-- Reference: pms.services.cashiering.folio_state.read_guest_state's SQLite path.
-- Tests: tests/services/test_folio_state_function.py, tests/services/test_frontdesk_write_path.py.
--
-- Applied by pms.db.function_files (CREATE OR REPLACE, its sha256 recorded in stored_function);
-- a change edits this file and adds a migration that applies it again. It runs with the
-- caller's rights, under row-level security; plan_cache_mode keeps one generic plan per server
-- connection (PgBouncer-safe, unlike SQL PREPARE).

CREATE OR REPLACE FUNCTION pms_lock_guest_folios(in_env uuid, in_stay uuid)
 RETURNS uuid
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
    guest uuid;
BEGIN
    SELECT g.id INTO guest FROM folio g
     WHERE g.env_id = in_env AND g.reservation_id = in_stay AND g.folio_type = 'GUEST'
     ORDER BY g.status = 'OPEN' DESC, g.created_at DESC
     LIMIT 1;
    IF guest IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM folio WHERE env_id = in_env AND id = guest FOR UPDATE;
    PERFORM 1 FROM folio
     WHERE env_id = in_env AND reservation_id = in_stay AND status = 'OPEN' AND id <> guest
     ORDER BY id FOR UPDATE;
    RETURN guest;
END
$function$;
