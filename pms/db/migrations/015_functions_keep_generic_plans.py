"""Migration 015: the plan-keeping functions (011-014) always run their statements on the plan
made once per server connection (`plan_cache_mode = force_generic_plan` as a function setting;
PostgreSQL only).

Why: a PL/pgSQL function keeps each statement's plan in the plan cache, but the cache
decides by itself, after five runs, whether to keep the parameter-free (generic) plan or to
plan again for every call's values (a custom plan), and it re-plans for good when the custom
plans looked cheaper. `pms_take_nights` fell on that side (`date = ANY(<the stay's nights>)`):
`perf` showed the server planning on every booking (GetCachedPlan -> standard_planner, a fifth
of the backend's CPU), and the in-process booking (/tmp/prof style, 800 bookings) went from
3.2 to 2.2 ms of database CPU per booking with the setting. Every statement in these functions
reads by a unique key or a key prefix, so the generic plan is the right one for any values.

A function's SET clause holds only while the function runs (the caller's setting is restored
when it returns): no session state, so PgBouncer's transaction mode is unaffected. A test
checks that every `pms_*` function carries the setting, so a new one cannot forget it.
"""

import peewee as pw
from peewee_migrate import Migrator

FUNCTIONS = (
    "pms_claim_idempotency_key(uuid, text, timestamptz)",
    "pms_take_nights(uuid, uuid, uuid, date[], integer)",
    "pms_booking_refs(uuid, uuid, uuid, uuid, date, date)",
    "pms_profile_refs(uuid, uuid, text, text)",
)


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        for signature in FUNCTIONS:
            migrator.sql(f"ALTER FUNCTION {signature} SET plan_cache_mode = force_generic_plan")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        for signature in FUNCTIONS:
            migrator.sql(f"ALTER FUNCTION {signature} RESET plan_cache_mode")
