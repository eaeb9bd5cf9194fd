"""Migration 004: housekeeping tasks, per-env set-up, email sandbox."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf



def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    @migrator.create_model
    class EnvironmentSetup(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        initialized_at = pmsf.UtcDateTimeField()
        source_event_id = pw.CharField(max_length=128, null=True)
        lists_of_values = pmsf.JsonField()
        module_settings = pmsf.JsonField()
        ledger_accounts_ready = pw.BooleanField(default=False)
        ledger_accounts = pmsf.JsonField(null=True)
        last_error = pw.TextField(null=True)
        events_seen = pw.IntegerField(default=1)

        class Meta:
            table_name = "environment_setup"
            indexes = [(('env_id',), True)]

    @migrator.create_model
    class HousekeepingTask(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        room = pw.ForeignKeyField(index=False, column_name='room_id', field='id', model=migrator.orm['room'], on_delete='CASCADE')
        kind = pw.CharField(max_length=24)
        status = pw.CharField(max_length=16)
        assignee = pw.CharField(max_length=120, null=True)
        notes = pw.TextField(null=True)
        business_date = pw.DateField(null=True)
        reservation_id = pw.UUIDField(null=True)
        dedupe_key = pw.CharField(max_length=160)
        source_event_id = pw.CharField(max_length=64, null=True)
        completed_at = pmsf.UtcDateTimeField(null=True)

        class Meta:
            table_name = "housekeeping_task"
            indexes = [(('env_id', 'dedupe_key'), True), (('env_id', 'property', 'status', 'business_date'), False), (('env_id', 'room', 'created_at'), False)]

    @migrator.create_model
    class SandboxEmail(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        message_id = pw.CharField(max_length=64)
        idempotency_key = pw.CharField(max_length=200)
        to = pw.CharField(max_length=254)
        subject = pw.CharField(max_length=300)
        body = pw.TextField()
        template = pw.CharField(max_length=60, null=True)
        meta = pmsf.JsonField(null=True)

        class Meta:
            table_name = "sandbox_email"
            indexes = [(('env_id', 'idempotency_key'), True), (('env_id', 'created_at'), False)]

    # The relay's claim (oldest unpublished first) and the audit push read only the rows still
    # to go: partial indexes keep that cost proportional to the backlog, not to the history.
    # Like every index on tenant data they lead with env_id; the cross-env claim scans the whole
    # (small) partial index and keeps the oldest rows with a top-N sort.
    migrator.sql("CREATE INDEX IF NOT EXISTS outbox_event_unpublished_idx ON outbox_event "
                 "(env_id, created_at, id) WHERE published_at IS NULL")
    migrator.sql("CREATE INDEX IF NOT EXISTS audit_entry_unpushed_idx ON audit_entry "
                 "(env_id, created_at, id) WHERE pushed_at IS NULL")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    """Drop the tables and indexes of migration 004."""
    migrator.sql("DROP INDEX IF EXISTS outbox_event_unpublished_idx")
    migrator.sql("DROP INDEX IF EXISTS audit_entry_unpushed_idx")
    migrator.remove_model('sandbox_email')
    migrator.remove_model('housekeeping_task')
    migrator.remove_model('environment_setup')
