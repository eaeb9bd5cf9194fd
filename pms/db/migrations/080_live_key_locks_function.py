"""Migration 080: `pms_lock_live_keys`, check-out's lock of the stay's live digital keys as a
PL/pgSQL function (pms/db/sql/pms_lock_live_keys.sql), so check-out's one locked read counts
them on a snapshot taken after the stay's lock, and a stay without keys reads none again."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import function_files


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        function_files.apply(migrator, database, "pms_lock_live_keys")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("DROP FUNCTION IF EXISTS pms_lock_live_keys(uuid, uuid)")
