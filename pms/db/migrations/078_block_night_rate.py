"""Migration 078: a block's rate grid. `room_block_night.rate` is the contracted price of one
room of that type on that night (null: the block's rate plan prices the night); a pick-up and
every re-pricing of the block's reservations read it."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('room_block_night', rate=pmsf.MoneyField(null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('room_block_night', 'rate')
