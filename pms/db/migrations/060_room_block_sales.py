"""Migration 060: a room block's sales fields: `market_segment` and `source` (codes, as the
sales system names them) and `owner` (the sales manager who owns the account)."""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('room_block',
                        market_segment=pw.CharField(max_length=32, null=True),
                        source=pw.CharField(max_length=32, null=True),
                        owner=pw.CharField(max_length=120, null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('room_block', 'market_segment', 'source', 'owner')
