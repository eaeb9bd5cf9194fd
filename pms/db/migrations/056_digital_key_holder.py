"""Migration 056: `digital_key.holder_profile_id`, the profile a key is for (the stay's guest by
default, or a companion named at issue): that profile's guest token reaches the key."""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('digital_key', holder_profile_id=pw.UUIDField(null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('digital_key', 'holder_profile_id')
