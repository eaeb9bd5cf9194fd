-- pms_booking_refs
--
-- A booking is priced and restricted as the search shows it: the booking's one
-- read of its references: the property, room type and rate plan rows (NULL rows when not the
-- property's), the stay's nightly rates and the restrictions touching its nights.
-- Reference: pms.queries.availability.load_search_data and SearchData.rules_for; caller:
-- pms.services.reservations.reservations._read_refs.
-- Test: tests/services/test_rule_equivalence.py.
--
-- Applied by pms.db.function_files (CREATE OR REPLACE, its sha256 recorded in stored_function);
-- a change edits this file and adds a migration that applies it again. It runs with the
-- caller's rights, under row-level security; plan_cache_mode keeps one generic plan per server
-- connection (PgBouncer-safe, unlike SQL PREPARE).

CREATE OR REPLACE FUNCTION pms_booking_refs(in_env uuid, in_property uuid, in_room_type uuid, in_rate_plan uuid, in_arrival date, in_departure date)
 RETURNS TABLE(p_row property, rt_row room_type, rp_row rate_plan, stay_rates json, stay_restrictions json)
 LANGUAGE plpgsql
 STABLE
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
BEGIN
    RETURN QUERY
    SELECT p, rt, rp,
           (SELECT json_agg(json_build_array(rs.date, rs.amount::text)) FROM rate_schedule rs
            WHERE rs.env_id = in_env AND rs.property_id = p.id AND rs.rate_plan_id = rp.id
              AND rs.room_type_id = rt.id AND rs.date >= in_arrival AND rs.date < in_departure),
           (SELECT json_agg(json_build_array(r.date, r.closed, r.closed_to_arrival,
                                             r.closed_to_departure, r.min_los, r.max_los))
            FROM restriction r
            WHERE r.env_id = in_env AND r.property_id = p.id AND r.date >= in_arrival
              AND r.date <= in_departure AND (r.rate_plan_id IS NULL OR r.rate_plan_id = rp.id)
              AND (r.room_type_id IS NULL OR r.room_type_id = rt.id))
    FROM property p
    LEFT JOIN room_type rt ON rt.env_id = in_env AND rt.id = in_room_type AND rt.property_id = p.id
    LEFT JOIN rate_plan rp ON rp.env_id = in_env AND rp.id = in_rate_plan AND rp.property_id = p.id
    WHERE p.env_id = in_env AND p.id = in_property;
END
$function$;
