"""Migration 052: `schedule_tick`, one row per recurring task of the service (the key sweeper,
the purges, the payments reconciler): when it is next due and who ran it last. A host runs a
tick only after moving `due_at` on in one conditional UPDATE, so two hosts never run the same
tick (pms.scheduling). Tenant-free, like the relay's leases (pms.db.shard_keys.GLOBAL_TABLES)."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    @migrator.create_model
    class ScheduleTick(pw.Model):
        name = pw.CharField(max_length=64, primary_key=True)
        due_at = pmsf.UtcDateTimeField()
        owner = pw.CharField(max_length=64, null=True)
        started_at = pmsf.UtcDateTimeField(null=True)
        finished_at = pmsf.UtcDateTimeField(null=True)
        runs = pw.IntegerField(default=0)
        last_result = pmsf.JsonField(null=True)

        class Meta:
            table_name = "schedule_tick"


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_model('schedule_tick')
