"""Migration 065: a cut-off per night of a room block. `room_block_night.cutoff_date` (null:
the block's own cutoff_date) is the day the night's unpicked rooms go back to the house, and
`cut_off_at` is set once, when they went (the night then holds nothing)."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db.fields import UtcDateTimeField


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('room_block_night',
                        cutoff_date=pw.DateField(null=True),
                        cut_off_at=UtcDateTimeField(null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('room_block_night', 'cutoff_date', 'cut_off_at')
