"""Migration 006: the request that claimed an Idempotency-Key (to recover an abandoned claim)."""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields(
        'idempotency_record',

        request_id=pw.CharField(max_length=128, null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('idempotency_record', 'request_id')
