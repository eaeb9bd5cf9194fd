"""Migration 053: the relay's held-back check reads the backlog of one stream, (env_id,
subject, aggregate_type), through an index no other query's predicate matches
(`outbox_event_stream_pending_idx`; it replaces `outbox_event_pending_versions_idx`).

Why: a stream is what one `aggregateversion` counter numbers, and a room type's own events, its
`inventory:updated` and its ARI events share a subject with three counters: keyed by subject
alone, a parked `inventory:updated` held the room type's ARI back. And the check's "unpublished"
(`published_at IS NULL`) matched the partial index of unpublished rows by (env_id,
created_at) too, which a planner on stale statistics walked once per picked row: the env's
whole backlog per row. The probe spells it `COALESCE(published_at, 'infinity') = 'infinity'`,
this index's predicate and no other's (pms.relay.claim). Parked rows are in it: they block too.
"""

import peewee as pw
from peewee_migrate import Migrator

UNPUBLISHED = {True: "COALESCE(published_at, 'infinity') = 'infinity'",
               False: "published_at IS NULL"}


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    where = UNPUBLISHED[isinstance(database, pw.PostgresqlDatabase)]
    migrator.sql("CREATE INDEX IF NOT EXISTS outbox_event_stream_pending_idx ON outbox_event "
                 f"(env_id, subject, aggregate_type, aggregate_version) WHERE {where}")
    migrator.sql("DROP INDEX IF EXISTS outbox_event_pending_versions_idx")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.sql("CREATE INDEX IF NOT EXISTS outbox_event_pending_versions_idx ON outbox_event "
                 "(env_id, subject, aggregate_version) WHERE published_at IS NULL")
    migrator.sql("DROP INDEX IF EXISTS outbox_event_stream_pending_idx")
