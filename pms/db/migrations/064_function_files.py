"""Migration 064: every stored function from its file (PostgreSQL only; SQLite has none).

Each `pms_*` function's current text lives in pms/db/sql/<name>.sql (pms.db.function_files):
this applies every file with CREATE OR REPLACE and records its sha256 in `stored_function`
(name, sha256, applied_at), a table of the schema, not of a tenant (no env_id, so no row-level
security; only migrations write it). A later change to a function edits its file and adds a
migration that applies it again.
"""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import function_files


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if not isinstance(database, pw.PostgresqlDatabase):
        return
    migrator.sql(function_files.create_table_sql())
    for name in function_files.names():
        function_files.apply(migrator, database, name)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    # the functions keep the files' text (what the earlier migrations made is the same rule)
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(f"DROP TABLE {function_files.TABLE}")
