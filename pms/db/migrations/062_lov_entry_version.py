"""Migration 062: a list-of-values entry carries a version: the env edits its own lists
(PUT/DELETE /v1/lov/{list}/{code}) and every change is an event with the entry's version."""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('lov_entry', version=pw.IntegerField(default=0))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('lov_entry', 'version')
