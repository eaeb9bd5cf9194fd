"""Migration 067: the profile carries its standing consent, the purposes currently granted
(pms.services.privacy.consents keeps it with each record; the records stay the proof)."""

import peewee as pw
from peewee_migrate import Migrator

import pms.db.fields as pmsf


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('profile', consents=pmsf.JsonField(null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('profile', 'consents')
