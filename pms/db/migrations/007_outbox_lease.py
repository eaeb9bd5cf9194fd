"""Migration 007: the leased relay (row leases, partitions, parking, the subscribers' cursor).

outbox_event gains its partition (crc32 of the aggregate id mod 64), a row lease (lease_owner,
lease_until), parked_at and the internal subscribers' cursor (dispatched_at, dispatch_attempts,
dispatch_next_at); audit_entry gains a row lease. relay_partition (64 rows) and relay_node are
the relays' tenant-free lease tables. Rows pending at upgrade get their partition; rows already
published count as dispatched (their reactions ran under the old relay).
"""

import zlib

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf

PARTITIONS = 64  # pms.models.platform.OUTBOX_PARTITIONS when this migration was written


def _backfill(database: pw.Database) -> None:
    cursor = database.execute_sql(
        'SELECT "id", "subject" FROM "outbox_event" WHERE "published_at" IS NULL')
    for row_id, subject in cursor.fetchall():
        database.execute_sql('UPDATE "outbox_event" SET "partition" = %s WHERE "id" = %s'
                             .replace("%s", database.param),
                             (zlib.crc32(str(subject).encode()) % PARTITIONS, row_id))


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        # outbox_event has FORCEd row-level security: the owner too sees rows only with the
        # cross-env switch on (transaction-local, like the relay's own transactions).
        migrator.sql("SELECT set_config('app.cross_env', 'on', true)")
    migrator.add_fields(
        'outbox_event',
        partition=pw.IntegerField(default=0),
        lease_owner=pw.CharField(max_length=64, null=True),
        lease_until=pmsf.UtcDateTimeField(null=True),
        parked_at=pmsf.UtcDateTimeField(null=True),
        dispatched_at=pmsf.UtcDateTimeField(null=True),
        dispatch_attempts=pw.IntegerField(default=0),
        dispatch_next_at=pmsf.UtcDateTimeField(null=True))
    migrator.add_fields(
        'audit_entry',
        lease_owner=pw.CharField(max_length=64, null=True),
        lease_until=pmsf.UtcDateTimeField(null=True))
    migrator.sql('UPDATE "outbox_event" SET "dispatched_at" = "published_at" '
                 'WHERE "published_at" IS NOT NULL')
    migrator.run(_backfill, database)
    # The subscribers' cursor reads only published rows whose reactions are still to run.
    migrator.sql("CREATE INDEX IF NOT EXISTS outbox_event_undispatched_idx ON outbox_event "
                 "(env_id, published_at, id) "
                 "WHERE published_at IS NOT NULL AND dispatched_at IS NULL")

    @migrator.create_model
    class RelayPartition(pw.Model):
        partition = pw.IntegerField(primary_key=True)
        owner = pw.CharField(max_length=64, null=True)
        expires_at = pmsf.UtcDateTimeField(null=True)

        class Meta:
            table_name = "relay_partition"

    @migrator.create_model
    class RelayNode(pw.Model):
        owner = pw.CharField(max_length=64, primary_key=True)
        started_at = pmsf.UtcDateTimeField()
        expires_at = pmsf.UtcDateTimeField()

        class Meta:
            table_name = "relay_node"

    migrator.sql('INSERT INTO "relay_partition" ("partition") VALUES '
                 + ", ".join(f"({n})" for n in range(PARTITIONS)))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_model('relay_node')
    migrator.remove_model('relay_partition')
    migrator.sql("DROP INDEX IF EXISTS outbox_event_undispatched_idx")
    migrator.remove_fields('audit_entry', 'lease_owner', 'lease_until')
    migrator.remove_fields('outbox_event', 'partition', 'lease_owner', 'lease_until',
                           'parked_at', 'dispatched_at', 'dispatch_attempts',
                           'dispatch_next_at')
