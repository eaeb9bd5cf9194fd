-- pms_take_nights
--
-- SPEC rule 6: a room type's nights are sold only while availability stays within inventory
-- minus the rooms out of order and out of service. The booking's take in one call: lock the
-- nights in date order, recount the rooms and their maintenance under the locks, judge each
-- night's sellable count (pms.domain.availability.sellable's formula, blocks' `held` included,
-- and the rooms other rate plans' allotments hold until their release, judged against the
-- property's business date, else its local date at `p_now`:
-- pms.domain.availability.channel_hold; `p_plan` is the booking's plan, null for none), and
-- take `p_count` rooms of every night or none. The nights are locked by a statement of their
-- own, so the count that follows (a new snapshot) sees what a holder of the locks committed.
-- Reference: pms.services.inventory.inventory._take_by_models (the SQLite path); caller:
-- pms.services.inventory.inventory._take_in_one.
-- Test: tests/services/test_rule_equivalence.py (same verdict and rows as the reference).
--
-- Applied by pms.db.function_files (CREATE OR REPLACE, its sha256 recorded in stored_function);
-- a change edits this file and adds a migration that applies it again. It runs with the
-- caller's rights, under row-level security; plan_cache_mode keeps one generic plan per server
-- connection (PgBouncer-safe, unlike SQL PREPARE).

CREATE OR REPLACE FUNCTION pms_take_nights(p_env uuid, p_property uuid, p_room_type uuid, p_nights date[], p_count integer, p_plan uuid, p_now timestamptz)
 RETURNS TABLE(out_date date, out_sellable integer, out_taken bigint, out_holds integer)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
BEGIN
    PERFORM 1 FROM inventory_day d
    WHERE d.env_id = p_env AND d.room_type_id = p_room_type AND d.date = ANY(p_nights)
    ORDER BY d.date FOR UPDATE;
    RETURN QUERY
    WITH locked AS (
        SELECT d.id, d.date, d.sell_limit, d.sold, d.held FROM inventory_day d
        WHERE d.env_id = p_env AND d.room_type_id = p_room_type AND d.date = ANY(p_nights)),
    rooms AS (
        SELECT count(*)::int AS physical FROM room r
        WHERE r.env_id = p_env AND r.property_id = p_property AND r.room_type_id = p_room_type),
    bd AS (
        SELECT coalesce(p.business_date,
                        (coalesce(p_now, now()) AT TIME ZONE p.timezone)::date) AS d
        FROM property p WHERE p.env_id = p_env AND p.id = p_property),
    counted AS (
        SELECT l.id, l.date, l.sell_limit, l.sold, l.held, r.physical, coalesce(m.ooo, 0) AS ooo,
               coalesce(m.out_rooms, 0) - coalesce(m.ooo, 0) AS oos, coalesce(h.n, 0) AS holds
        FROM locked l CROSS JOIN rooms r
        LEFT JOIN LATERAL (
            SELECT count(DISTINCT mt.room_id) FILTER (WHERE mt.kind = 'OUT_OF_ORDER')::int AS ooo,
                   count(DISTINCT mt.room_id)::int AS out_rooms
            FROM maintenance mt JOIN room rm ON rm.id = mt.room_id AND rm.env_id = p_env
            WHERE mt.env_id = p_env AND mt.property_id = p_property AND mt.active
              AND rm.room_type_id = p_room_type AND mt.from_date <= l.date
              AND mt.to_date >= l.date
        ) m ON true
        LEFT JOIN LATERAL (
            SELECT sum(greatest(greatest(a.allotment, 0) - (
                       SELECT count(*) FROM reservation rs
                       WHERE rs.env_id = p_env AND rs.rate_plan_id = a.rate_plan_id
                         AND rs.room_type_id = a.room_type_id
                         AND rs.status IN ('CONFIRMED', 'CHECKED_IN', 'CHECKED_OUT')
                         AND rs.arrival_date <= a.date AND rs.departure_date > a.date), 0))::int
                   AS n
            FROM rate_plan_allotment a CROSS JOIN bd
            WHERE a.env_id = p_env AND a.room_type_id = p_room_type AND a.date = l.date
              AND a.release_days IS NOT NULL AND a.date - greatest(a.release_days, 0) > bd.d
              AND (p_plan IS NULL OR a.rate_plan_id <> p_plan)
        ) h ON true),
    judged AS (
        SELECT c.*, greatest(least(greatest(c.physical - c.ooo - c.oos, 0),
                                   greatest(coalesce(c.sell_limit, 2147483647), 0))
                             - greatest(c.sold, 0) - greatest(c.held, 0) - c.holds, 0)::int
                    AS sellable
        FROM counted c),
    verdict AS (
        SELECT count(*) = cardinality(p_nights)
               AND coalesce(bool_and(j.sellable >= p_count), false) AS ok
        FROM judged j),
    taken AS (
        UPDATE inventory_day d
        SET sold = d.sold + p_count, physical = j.physical, ooo = j.ooo, oos = j.oos, updated_at = now()
        FROM judged j, verdict v
        WHERE d.env_id = p_env AND d.id = j.id AND v.ok
        RETURNING d.id)
    SELECT j.date, j.sellable, (SELECT count(*) FROM taken), j.holds FROM judged j ORDER BY j.date;
END
$function$;
