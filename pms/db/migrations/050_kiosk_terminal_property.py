"""Migration 050: `kiosk_terminal.property_id`, the property a lobby terminal serves (bound at
its first lookup): a terminal's lookups and sessions at another property are refused."""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('kiosk_terminal', property_id=pw.UUIDField(null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('kiosk_terminal', 'property_id')
