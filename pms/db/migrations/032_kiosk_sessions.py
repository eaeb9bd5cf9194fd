"""Migration 032: kiosk terminals (the failed-lookup budget per terminal) and kiosk
sessions (what a lookup returns, bound to the terminal and the reservation).

Both are tenant tables: env_id leads the primary key and every unique index; the migrator's
tenant policy (RLS) covers them on PostgreSQL.
"""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    @migrator.create_model
    class KioskTerminal(pw.Model):
        id = pw.UUIDField()
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        terminal = pw.CharField(max_length=200)
        failures = pw.IntegerField(default=0)
        window_started_at = pmsf.UtcDateTimeField(null=True)
        blocked_until = pmsf.UtcDateTimeField(null=True)
        lookups = pw.IntegerField(default=0)

        class Meta:
            table_name = "kiosk_terminal"
            primary_key = pw.CompositeKey("env_id", "id")
            indexes = [(('env_id', 'terminal'), True)]

    @migrator.create_model
    class KioskSession(pw.Model):
        id = pw.UUIDField()
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        terminal = pw.CharField(max_length=200)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id',
                                      model=migrator.orm['property'], on_delete='CASCADE')
        reservation_id = pw.UUIDField(null=True)
        token_digest = pw.CharField(max_length=64)
        last_seen_at = pmsf.UtcDateTimeField()
        ended_at = pmsf.UtcDateTimeField(null=True)

        class Meta:
            table_name = "kiosk_session"
            primary_key = pw.CompositeKey("env_id", "id")
            indexes = [(('env_id', 'token_digest'), True),
                       (('env_id', 'terminal', 'created_at'), False)]


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_model('kiosk_session')
    migrator.remove_model('kiosk_terminal')
