"""Migration 018: check-in's room pick (pms.services.frontdesk.checkin.pick_room) as the PL/pgSQL function
`pms_pick_room` (PostgreSQL; SQLite keeps `auto_assign`).

Why: the inline statement was planned on every check-in (0.4-0.8 ms), and it checked
every vacant room of the type against the holds and maintenance before sorting them for its
LIMIT 1, the holds as an anti-join that read every hold of the env on the nights first. Check-in's
database CPU doubled from 99 to 259 rooms a type in `make bench`; the statement alone took
1.6 ms at 250 vacant rooms of a type. Now:

- the vacant rooms of the type (their ids, by the pick's order: clean first, then by number)
  are read without the checks, which is a sort of a few hundred short rows at most;
- they are walked in that order, each checked against the holds and maintenance by an index
  probe of that room, then locked; the first locked one is the pick, so a usual check-in
  probes one room. A room changed since it was read (taken by a check-in that committed)
  fails the lock's recheck of its status and the walk goes on; one locked by a check-in in
  flight is skipped (SKIP LOCKED), as before;
- a PL/pgSQL function keeps its plans per server connection (PgBouncer's transaction mode
  cannot take that away, as it can SQL `PREPARE`), generic by `plan_cache_mode` (migration
  015's rule for every pms_* function). It runs with the caller's rights, under row-level
  security.

A partial index on the vacant rooms in the pick's order was tried and left out: every check-in
and check-out changes a room's status, so the index took a new entry each time and grew dead
ones, and the generic plan did not walk it anyway (it cannot tell how many rooms pass).

Arguments: the env, property, room type, the stay (its own holds do not count), the nights
[in_start, in_end), the out-of-order housekeeping marks, and `in_lock`: lock the room FOR
UPDATE SKIP LOCKED; false only for the TEST-ONLY unlocked control runs. Returns the room row
(SETOF room: the caller names the columns it reads).
"""

import peewee as pw
from peewee_migrate import Migrator

# The candidates in the pick's order, each checked against holds and maintenance by an index
# probe, then locked; the first locked one is the pick (see the module's docstring).
_WALK = """
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
    END LOOP;"""

PICK_FUNCTION = f"""
CREATE OR REPLACE FUNCTION pms_pick_room(in_env uuid, in_property uuid, in_room_type uuid,
                                         in_stay uuid, in_start date, in_end date,
                                         in_out_of_order text[], in_lock boolean)
RETURNS SETOF room
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
    cand record;
BEGIN{_WALK}
END
$fn$
"""


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(PICK_FUNCTION)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("DROP FUNCTION IF EXISTS "
                     "pms_pick_room(uuid, uuid, uuid, uuid, date, date, text[], boolean)")
