"""Migration 022 (b): `pms_take_nights` stamps `updated_at` on the inventory days it takes
(PostgreSQL only; SQLite's take is a peewee UPDATE, which stamps it).

Why: one rule for `updated_at`, everywhere (pms.db.stamping): the booking's
take of the nights was an UPDATE that moved `sold` and left `updated_at` behind. The body is
migration 012's with `updated_at = now()` added to the take; `CREATE OR REPLACE` drops the
function's settings, so migration 015's `plan_cache_mode` is set again.
"""

import importlib

import peewee as pw
from peewee_migrate import Migrator

SIGNATURE = "pms_take_nights(uuid, uuid, uuid, date[], integer)"
# the end of the take's SET clause (sold, physical, ooo, oos), once in the function
TAKEN = "ooo = j.ooo, oos = j.oos\n"


def _original() -> str:
    return importlib.import_module("pms.db.migrations.012_take_nights_function").TAKE_FUNCTION


def stamped_function() -> str:
    text = _original()
    if text.count(TAKEN) != 1:  # pragma: no cover - migration 012 is frozen
        raise RuntimeError("pms_take_nights: the take's SET clause is not where it was")
    return text.replace(TAKEN, TAKEN.rstrip("\n") + ", updated_at = now()\n")


def _replace(migrator: Migrator, text: str) -> None:
    migrator.sql(text)
    migrator.sql(f"ALTER FUNCTION {SIGNATURE} SET plan_cache_mode = force_generic_plan")


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        _replace(migrator, stamped_function())


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        _replace(migrator, _original())
