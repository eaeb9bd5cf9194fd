"""Migration 079: `ari_stream.released_through`, the last day whose channel-hold releases the
room type's ARI stream has announced for a property whose day follows the clock (no night
audit moves its business date): the `allotments.releases` schedule announces each day's
releases once (pms.services.distribution.hold_releases)."""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('ari_stream', released_through=pw.DateField(null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('ari_stream', 'released_through')
