"""Migration 036: `read_mark`, where a caller's last write position is remembered
for 30 s so that its next reads go to a hot standby only once that standby has replayed past it
(pms.db.replicas). PostgreSQL only (SQLite has no replicas).

UNLOGGED: the rows are bookkeeping that matters for 30 s; they make no WAL and are not
replicated (only the primary reads them). A crash of the primary empties the table, which at
worst sends a caller's next reads to a standby that has not replayed its last write yet; a
failover likewise starts with no marks. `env_id` leads the key; row-level security comes with
every table that has `env_id` (pms.db.migrator).
"""

import peewee as pw
from peewee_migrate import Migrator

CREATE = """
CREATE UNLOGGED TABLE IF NOT EXISTS read_mark (
    env_id uuid NOT NULL,
    sub text NOT NULL,
    lsn pg_lsn NOT NULL,
    until timestamptz NOT NULL,
    PRIMARY KEY (env_id, sub)
)
"""


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(CREATE)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("DROP TABLE IF EXISTS read_mark")
