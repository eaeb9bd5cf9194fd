"""Migration 022: `pms_announce_xact()`, which raises a NOTICE `pms-xact <transaction id>`
(PostgreSQL only).

Why: a connection lost while a transaction's COMMIT is on its way leaves its
outcome unknown to the service. Each unit of work sends this function as a prelude of its first
message (no round trip of its own); the notice comes back with that message's answer and names
the transaction, whose status a fresh connection can then ask (`pg_xact_status`). See
pms.db.commit_outcome. It reads no table and keeps no state; it carries migration 015's
plan_cache_mode as every `pms_*` function does.
"""

import peewee as pw
from peewee_migrate import Migrator

ANNOUNCE_FUNCTION = """
CREATE OR REPLACE FUNCTION pms_announce_xact() RETURNS void
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    RAISE NOTICE USING MESSAGE = 'pms-xact ' || pg_current_xact_id()::text;
END
$$
"""


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(ANNOUNCE_FUNCTION)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("DROP FUNCTION IF EXISTS pms_announce_xact()")
