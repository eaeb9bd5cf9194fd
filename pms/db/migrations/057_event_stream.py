"""Migration 057: `event_stream`, the version counter of an event stream that is not its row's
own aggregate (CONTRACT §4: `aggregateversion` rises by one with every change of the aggregate
the event type names).

Why: a rate plan's row carried the versions of its `rate_plan` events and, on the same counter,
those of its `rate_schedule`, `restriction` and `rate_plan_allotment` events (a room type's, its
`inventory` events): each stream then showed gaps (rate_schedule 2, 4), and a consumer dropping
events by version could not tell a gap from a loss. Such events take their version from their
stream's row here, (env_id, aggregate, subject), made on first use under its row lock; the
relay orders and parks by the same stream (migration 053).
"""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf
from pms.db.shard_keys import create_tenant_model


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if database.table_exists("event_stream"):
        return  # a database that has these counters already keeps them

    @create_tenant_model(migrator, database)
    class EventStream(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        aggregate = pw.CharField(max_length=60)
        subject = pw.UUIDField()
        version = pw.IntegerField(default=0)

        class Meta:
            table_name = "event_stream"
            indexes = [(('env_id', 'aggregate', 'subject'), True)]


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_model('event_stream')
