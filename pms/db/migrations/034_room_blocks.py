"""Migration 034: room blocks, their allocation grid, rooms held out of inventory.

- `room_block`: a block of rooms at a property (code, dates, rate plan, optional company
  profile, status by BLOCK_MACHINE, the cut-off date, `deducts`: whether its unpicked rooms are
  held out of the house's inventory in its current state).
- `room_block_night`: the allocation grid, one row per (block, room type, night): allotted,
  picked (live reservations of the block), washed (taken off the allocation by a wash) and
  released (unpicked rooms given back to the house at the cut-off).
- `inventory_day.held`: the rooms of deducting blocks not yet picked up, per room type and night,
  kept under the same row locks as `sold` (pms.services.groups.room_blocks); the one sellable formula
  (pms.domain.availability.sellable) subtracts it.
- `reservation.block_id`: a reservation picked up from a block.
- `pms_take_nights` (PostgreSQL): the booking's take judges `sellable` with `held` subtracted.
  The body is migration 022's (012's with `updated_at` stamped) with `held` read under the locks;
  `CREATE OR REPLACE` drops the function's settings, so `plan_cache_mode` is set again.
"""

import importlib

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf

SIGNATURE = "pms_take_nights(uuid, uuid, uuid, date[], integer)"
# (old, new) replacements of the take's text, each found exactly once
HELD_EDITS = (
    ("SELECT d.id, d.date, d.sell_limit, d.sold FROM inventory_day d",
     "SELECT d.id, d.date, d.sell_limit, d.sold, d.held FROM inventory_day d"),
    ("SELECT l.id, l.date, l.sell_limit, l.sold, r.physical",
     "SELECT l.id, l.date, l.sell_limit, l.sold, l.held, r.physical"),
    ("- greatest(c.sold, 0), 0)::int AS sellable",
     "- greatest(c.sold, 0) - greatest(c.held, 0), 0)::int AS sellable"),
)


def _stamped() -> str:
    return importlib.import_module(
        "pms.db.migrations.022_take_nights_stamps_updated_at").stamped_function()


def held_function() -> str:
    text = _stamped()
    for old, new in HELD_EDITS:
        if text.count(old) != 1:  # pragma: no cover - migrations 012 and 022 are frozen
            raise RuntimeError(f"pms_take_nights: {old!r} is not where it was")
        text = text.replace(old, new)
    return text


def _replace(migrator: Migrator, text: str) -> None:
    migrator.sql(text)
    migrator.sql(f"ALTER FUNCTION {SIGNATURE} SET plan_cache_mode = force_generic_plan")


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    @migrator.create_model
    class RoomBlock(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id',
                                      model=migrator.orm['property'], on_delete='RESTRICT')
        code = pw.CharField(max_length=32)
        name = pw.CharField(max_length=200)
        arrival_date = pw.DateField()
        departure_date = pw.DateField()
        cutoff_date = pw.DateField()
        rate_plan_id = pw.UUIDField()
        company_profile_id = pw.UUIDField(null=True)
        folio_id = pw.UUIDField(null=True)
        status = pw.CharField(max_length=16)
        deducts = pw.BooleanField(default=False)
        cut_off_at = pmsf.UtcDateTimeField(null=True)

        class Meta:
            table_name = "room_block"
            indexes = [(('env_id', 'property', 'code'), True),
                       (('env_id', 'property', 'status'), False),
                       (('env_id', 'cutoff_date'), False)]

    @migrator.create_model
    class RoomBlockNight(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        block = pw.ForeignKeyField(index=False, column_name='block_id', field='id',
                                   model=migrator.orm['room_block'], on_delete='CASCADE')
        room_type_id = pw.UUIDField()
        date = pw.DateField()
        allotted = pw.IntegerField(default=0)
        picked = pw.IntegerField(default=0)
        washed = pw.IntegerField(default=0)
        released = pw.IntegerField(default=0)

        class Meta:
            table_name = "room_block_night"
            indexes = [(('env_id', 'block', 'room_type_id', 'date'), True),
                       (('env_id', 'room_type_id', 'date'), False)]

    migrator.add_fields('inventory_day', held=pw.IntegerField(
        default=0, constraints=[pw.SQL('DEFAULT 0')]))  # raw INSERTs (the calendar) omit it
    migrator.add_fields('reservation', block_id=pw.UUIDField(null=True))
    if isinstance(database, pw.PostgresqlDatabase):
        _replace(migrator, held_function())


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        _replace(migrator, _stamped())
    migrator.remove_fields('reservation', 'block_id')
    migrator.remove_fields('inventory_day', 'held')
    migrator.remove_model('room_block_night')
    migrator.remove_model('room_block')
