-- pms_pick_room
--
-- SPEC rule 5's check-in room: the first vacant room of the booked type, clean ones first then
-- by number, not held by another stay nor in maintenance on the nights, not marked out of order;
-- locked FOR UPDATE SKIP LOCKED (a room another check-in is taking is skipped, not waited for).
-- `in_lock` false only for the TEST-ONLY unlocked control runs.
-- Reference: pms.services.reservations.stays.auto_assign; caller:
-- pms.services.frontdesk.checkin.pick_room.
-- Test: tests/services/test_rule_equivalence.py.
--
-- Applied by pms.db.function_files (CREATE OR REPLACE, its sha256 recorded in stored_function);
-- a change edits this file and adds a migration that applies it again. It runs with the
-- caller's rights, under row-level security; plan_cache_mode keeps one generic plan per server
-- connection (PgBouncer-safe, unlike SQL PREPARE).

CREATE OR REPLACE FUNCTION pms_pick_room(in_env uuid, in_property uuid, in_room_type uuid, in_stay uuid, in_start date, in_end date, in_out_of_order text[], in_lock boolean)
 RETURNS SETOF room
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
    cand record;
BEGIN
    FOR cand IN
        SELECT r.id FROM room r
         WHERE r.env_id = in_env AND r.property_id = in_property
           AND r.room_type_id = in_room_type AND r.status = 'VACANT'
           AND r.hk_status <> ALL(in_out_of_order)
         ORDER BY r.hk_status = 'DIRTY', r.room_number
    LOOP
        CONTINUE WHEN EXISTS (
            SELECT 1 FROM room_stay h
             WHERE h.env_id = in_env AND h.room_id = cand.id
               AND h.start_date < in_end AND h.end_date > in_start
               AND h.reservation_id <> in_stay);
        CONTINUE WHEN EXISTS (
            SELECT 1 FROM maintenance m
             WHERE m.env_id = in_env AND m.room_id = cand.id AND m.active
               AND m.from_date < in_end AND m.to_date >= in_start);
        IF in_lock THEN
            RETURN QUERY SELECT r.* FROM room r
                          WHERE r.env_id = in_env AND r.id = cand.id AND r.status = 'VACANT'
                            AND r.hk_status <> ALL(in_out_of_order)
                            FOR UPDATE SKIP LOCKED;
        ELSE
            RETURN QUERY SELECT r.* FROM room r
                          WHERE r.env_id = in_env AND r.id = cand.id;
        END IF;
        IF FOUND THEN
            RETURN;
        END IF;
    END LOOP;
END
$function$;
