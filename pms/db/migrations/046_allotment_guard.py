"""Migration 046: `pms_allotment_guard`, the booking's check, sent with its COMMIT,
that no allotment of its rate plan was set on its nights while it ran (PostgreSQL; SQLite's
write transaction is serialized whole, BEGIN IMMEDIATE).

Why: a booking reads its rate plan (and the plan's version) BEFORE it locks its nights, and a
plan that had no allotment at that version skips the count (`pms.queries.allotments
.has_allotments`, kept per process: PERF, no read for the plans that use none). An allotment
write takes the same night locks (`pms.services.inventory.allotments.set_allotments`); one that
commits while the booking waits for them would be missed: the booking would sell past it, and
the ARI events would hold the plan's rooms left as the write counted them, one too many. The
guard runs after the locks (a statement of its own: a snapshot taken after them) and fails
the transaction as a serialization failure (40001: 503 `lock_timeout`, Retry-After) when an
allotment row of the plan and room type exists on one of the nights; the retry reads the plan
again and counts. Its statement keeps the plan made once per server connection (as 015), a
probe of the allotments' unique key however small the table was when the plan was made (as
020). The function is frozen here, as migrations are.
"""

import peewee as pw
from peewee_migrate import Migrator

GUARD_FUNCTION = """
CREATE OR REPLACE FUNCTION pms_allotment_guard(p_env uuid, p_plan uuid, p_room_type uuid,
                                               p_nights date[])
RETURNS void LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off AS $fn$
BEGIN
    IF EXISTS (SELECT 1 FROM rate_plan_allotment a
               WHERE a.env_id = p_env AND a.rate_plan_id = p_plan
                 AND a.room_type_id = p_room_type AND a.date = ANY(p_nights)) THEN
        RAISE EXCEPTION 'an allotment of the rate plan was set on the booked nights while the '
                        'booking ran; retry'
            USING ERRCODE = 'serialization_failure';
    END IF;
END
$fn$
"""


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(GUARD_FUNCTION)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("DROP FUNCTION IF EXISTS pms_allotment_guard(uuid, uuid, uuid, date[])")
