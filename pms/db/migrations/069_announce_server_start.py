"""Migration 069: `pms_announce_xact()` names the server's start beside the transaction id
(pms/db/sql/pms_announce_xact.sql), so a lost commit's outcome is asked of the server that ran
it and no other (pms.db.commit_outcome)."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import function_files


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        function_files.apply(migrator, database, "pms_announce_xact")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    pass
