-- pms_allotment_guard
--
-- A rate plan's allotment is never sold past: sent with a booking's COMMIT, it fails the
-- transaction as a serialization failure (40001, retried) when an allotment of the plan and
-- room type was set on the booked nights while the booking ran.
-- Reference: none needed on SQLite (its write transaction is serialized whole, BEGIN
-- IMMEDIATE); caller: pms.queries.allotments.
-- Test: tests/concurrency/test_allotment_race.py.
--
-- Applied by pms.db.function_files (CREATE OR REPLACE, its sha256 recorded in stored_function);
-- a change edits this file and adds a migration that applies it again. It runs with the
-- caller's rights, under row-level security; plan_cache_mode keeps one generic plan per server
-- connection (PgBouncer-safe, unlike SQL PREPARE).

CREATE OR REPLACE FUNCTION pms_allotment_guard(p_env uuid, p_plan uuid, p_room_type uuid, p_nights date[])
 RETURNS void
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
BEGIN
    IF EXISTS (SELECT 1 FROM rate_plan_allotment a
               WHERE a.env_id = p_env AND a.rate_plan_id = p_plan
                 AND a.room_type_id = p_room_type AND a.date = ANY(p_nights)) THEN
        RAISE EXCEPTION 'an allotment of the rate plan was set on the booked nights while the '
                        'booking ran; retry'
            USING ERRCODE = 'serialization_failure';
    END IF;
END
$function$;
