"""Room blocks: a block of rooms at a property and its allocation grid.

RoomBlock: code, name, dates ([arrival, departure)), rate plan, optional company profile, status
(BLOCK_MACHINE, pms/domain/states.py), the cut-off date (default the arrival date), `deducts`
(whether its unpicked rooms are held out of house inventory in its current state: DEFINITE and
ACTUAL always, TENTATIVE when the property's `blocks.tentative_deducts_inventory` was on when it
went TENTATIVE) and `cut_off_at` (set once, when its unpicked rooms went back to the house).

RoomBlockNight: one row per (block, room type, night): allotted, picked (live reservations of the
block; above allotted when an overpick sold rooms from the house), washed (rooms a wash took off
the allocation), released (unpicked rooms the cut-off gave back), its own cut-off date (null: the
block's), `cut_off_at` (set once, when the night's unpicked rooms went back to the house) and
`rate`, the contracted price of a room that night (null: the block's rate plan prices it).
Held = allotted - picked while the block deducts and neither it nor the night is cut off, else
0; the sum over blocks is kept in `InventoryDay.held` (pms.services.groups.room_blocks).
"""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, TenantModel
from pms.db.fields import MoneyField, UtcDateTimeField
from pms.models.property import Property


class RoomBlock(AggregateModel):
    property = peewee.ForeignKeyField(Property, backref="room_blocks", on_delete="RESTRICT",
                                      index=False)
    code = peewee.CharField(max_length=32)
    name = peewee.CharField(max_length=200)
    arrival_date = peewee.DateField()
    departure_date = peewee.DateField()
    cutoff_date = peewee.DateField()
    rate_plan_id = peewee.UUIDField()
    company_profile_id = peewee.UUIDField(null=True)
    folio_id = peewee.UUIDField(null=True)
    status = peewee.CharField(max_length=16)
    deducts = peewee.BooleanField(default=False)
    cut_off_at = UtcDateTimeField(null=True)
    # the sales system's view of the business (migration 060)
    market_segment = peewee.CharField(max_length=32, null=True)
    source = peewee.CharField(max_length=32, null=True)
    owner = peewee.CharField(max_length=120, null=True)  # the sales manager owning it
    # members' room nights billed to the master folio: NONE | ROOM_AND_TAX |
    # ROOM_TAX_AND_PACKAGES (migration 072)
    master_folio_routing = peewee.CharField(max_length=24, default="NONE")

    class Meta:
        table_name = "room_block"
        indexes = ((("env_id", "property", "code"), True),
                   (("env_id", "property", "status"), False),
                   (("env_id", "cutoff_date"), False))


class RoomBlockNight(TenantModel):
    block = peewee.ForeignKeyField(RoomBlock, backref="nights", on_delete="CASCADE", index=False)
    room_type_id = peewee.UUIDField()
    date = peewee.DateField()
    allotted = peewee.IntegerField(default=0)
    picked = peewee.IntegerField(default=0)
    washed = peewee.IntegerField(default=0)
    released = peewee.IntegerField(default=0)
    cutoff_date = peewee.DateField(null=True)  # migration 065; null: the block's cutoff_date
    cut_off_at = UtcDateTimeField(null=True)
    rate = MoneyField(null=True)  # migration 078; null: the rate plan's price that night

    class Meta:
        table_name = "room_block_night"
        indexes = ((("env_id", "block", "room_type_id", "date"), True),
                   (("env_id", "room_type_id", "date"), False))
