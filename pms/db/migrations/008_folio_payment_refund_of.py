"""Migration 008: folio_payment.refund_of, the captured payment a REFUND row gives money back
from (null for cash refunds and for every other kind)."""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields(
        'folio_payment',

        refund_of=pw.UUIDField(null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('folio_payment', 'refund_of')
