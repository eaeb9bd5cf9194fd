"""Migration 021: a new outbox row is due by the database's clock, not its writer's;
and the reactions' cursor has an index of its own now that it reads unpublished rows too.

Due by the database's clock (PostgreSQL only: the embedded SQLite database has one host, whose
clock is the database's).

The relay compares `next_attempt_at` with the database's time (pms.relay.clock); a row
written by a web host whose clock runs ahead of the database's would wait for the difference.
`pms_write_outbox_event` (migration 017) now stores `LEAST(p_next_attempt_at, now())`: due at
once by the database's clock (`now()` is the writing transaction's start), whatever the host
said. Same parameters, same plan settings; the other columns as before.

The reactions' cursor (pms.relay.dispatch) reads the rows whose reactions have not run,
published or not (they no longer wait for the bus): `outbox_event_reactions_idx` over
`dispatched_at IS NULL` (rows still to publish, and reactions still to run: a small set), so
the relay's probe each sweep reads no published row (both dialects).
"""

import importlib

import peewee as pw
from peewee_migrate import Migrator

_017 = importlib.import_module("pms.db.migrations.017_journal_write_functions")

OUTBOX_EVENT_FUNCTION = _017.OUTBOX_EVENT_FUNCTION.replace(
    "p_published_at, p_attempts, p_next_attempt_at, p_last_error",
    "p_published_at, p_attempts, LEAST(p_next_attempt_at, now()), p_last_error")
assert OUTBOX_EVENT_FUNCTION != _017.OUTBOX_EVENT_FUNCTION


REACTIONS_INDEX = ("CREATE INDEX IF NOT EXISTS outbox_event_reactions_idx ON outbox_event "
                   "(dispatch_next_at, created_at) WHERE dispatched_at IS NULL")


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(OUTBOX_EVENT_FUNCTION)
    migrator.sql(REACTIONS_INDEX)


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.sql("DROP INDEX IF EXISTS outbox_event_reactions_idx")
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql(_017.OUTBOX_EVENT_FUNCTION)
