"""Inventory per room type and night, and maintenance periods that take rooms out of sale.

`InventoryDay.sold` and `sell_limit` are the stored truth. `physical`, `ooo` and `oos` are
recounted from the rooms and the active maintenance rows whenever a row is locked for a change
(take, release, maintenance, sell limit) and written back, so they are a snapshot of the last
locked change; readers that must be exact (availability) recount them the same way.
"""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, TenantModel
from pms.models.property import Property, Room, RoomType


class InventoryDay(TenantModel):
    property = peewee.ForeignKeyField(Property, backref="inventory_days",
                                      index=False, on_delete="CASCADE")
    room_type = peewee.ForeignKeyField(RoomType, backref="inventory_days",
                                       index=False, on_delete="CASCADE")
    date = peewee.DateField()
    physical = peewee.IntegerField(default=0)
    ooo = peewee.IntegerField(default=0)
    oos = peewee.IntegerField(default=0)
    sell_limit = peewee.IntegerField(null=True)
    sold = peewee.IntegerField(default=0)
    # rooms of deducting room blocks not yet picked up (pms.services.groups.room_blocks)
    held = peewee.IntegerField(default=0, constraints=[peewee.SQL("DEFAULT 0")])

    class Meta:
        table_name = "inventory_day"
        indexes = (
            (("env_id", "room_type", "date"), True),
            (("env_id", "property", "date"), False),
        )


class Maintenance(AggregateModel):
    """A room out of order or out of service for the nights from_date..to_date (inclusive)."""

    property = peewee.ForeignKeyField(Property, backref="maintenance",
                                      index=False, on_delete="CASCADE")
    room = peewee.ForeignKeyField(Room, backref="maintenance", index=False, on_delete="CASCADE")
    kind = peewee.CharField(max_length=16)
    from_date = peewee.DateField()
    to_date = peewee.DateField()
    reason = peewee.TextField(null=True)
    active = peewee.BooleanField(default=True)

    class Meta:
        table_name = "maintenance"
        indexes = (
            (("env_id", "property", "from_date"), False),
            (("env_id", "room"), False),
        )
