"""Inventory per room type and night, sell limits, and maintenance (out of order / service).

Ranges are `from_date`..`to_date`, both inclusive.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Annotated, Literal

import msgspec

from pms.schemas.common import Cursor, Limit, Out, RoomNumber, Strict, Text
from pms.schemas.rates import Weekday

MaintenanceKind = Literal["OUT_OF_ORDER", "OUT_OF_SERVICE"]


class InventoryQuery(msgspec.Struct, kw_only=True):
    from_date: date
    to_date: date
    room_type_id: uuid.UUID | None = None


class InventoryDayOut(Out):
    room_type_id: uuid.UUID
    date: date
    physical: int
    out_of_order: int
    out_of_service: int
    sell_limit: int | None
    sold: int
    sellable: int


class InventoryOut(Out):
    property_id: uuid.UUID
    data: list[InventoryDayOut]
    next_cursor: str | None = None


class AffectedBlockOut(Out):
    """A room block a capacity cut undercuts: it holds rooms on `nights` where rooms sold and
    held by blocks now exceed the capacity (the cut is kept; the block keeps its rooms)."""

    block_id: uuid.UUID
    code: str
    name: str
    status: str
    nights: list[date]


class SellLimitOut(InventoryOut):
    """The inventory of the range after a sell-limit change, with the blocks it undercuts."""

    affected_blocks: list[AffectedBlockOut] = []


class SellLimitIn(Strict):
    """Set (or, with null, remove) the sell limit of a room type for a range of nights.

    The limit can lower what may be sold, even below what is already sold (existing
    reservations stay); it never raises availability above physical - OOO - OOS.
    """

    room_type_id: uuid.UUID
    from_date: date
    to_date: date
    sell_limit: Annotated[int, msgspec.Meta(ge=0, le=100000)] | None
    weekdays: Annotated[list[Weekday], msgspec.Meta(max_length=7)] | None = None


class MaintenanceIn(Strict):
    """Take one room out of order or out of service for the nights from_date..to_date."""

    kind: MaintenanceKind
    from_date: date
    to_date: date
    room_id: uuid.UUID | None = None
    room_number: RoomNumber | None = None
    reason: Text | None = None


class MaintenanceQuery(msgspec.Struct, kw_only=True):
    limit: Limit = 50
    cursor: Cursor | None = None
    room_id: uuid.UUID | None = None
    active: bool | None = None


class MaintenanceOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    room_id: uuid.UUID
    room_number: str
    room_type_id: uuid.UUID
    kind: MaintenanceKind
    from_date: date
    to_date: date
    reason: str | None
    active: bool
    created_at: datetime


class MaintenanceCreatedOut(MaintenanceOut):
    """A new maintenance period, with the room blocks it undercuts."""

    affected_blocks: list[AffectedBlockOut] = []


def maintenance_out(row: object, room: object) -> MaintenanceOut:
    return MaintenanceOut(id=row.id, property_id=row.property_id, room_id=row.room_id,
                          room_number=room.room_number, room_type_id=room.room_type_id,
                          kind=row.kind, from_date=row.from_date, to_date=row.to_date,
                          reason=row.reason, active=row.active, created_at=row.created_at)


# -- allotments per rate plan --------------------------------------------------------

class AllotmentIn(Strict):
    """Set (or, with null, remove) a rate plan's allotment of one room type for a range of
    nights: at most `allotment` rooms of the type are sold on this plan each night (besides, and
    never above, what the room type itself can sell)."""

    room_type_id: uuid.UUID
    from_date: date
    to_date: date
    allotment: Annotated[int, msgspec.Meta(ge=0, le=100000)] | None
    weekdays: Annotated[list[Weekday], msgspec.Meta(max_length=7)] | None = None
    # null: a cap only; N: the plan's unsold rooms are held for it until N days before the
    # night (then they return to the house)
    release_days: Annotated[int, msgspec.Meta(ge=0, le=3650)] | None = None


class AllotmentQuery(msgspec.Struct, kw_only=True):
    from_date: date
    to_date: date
    room_type_id: uuid.UUID | None = None


class AllotmentNightOut(Out):
    room_type_id: uuid.UUID
    date: date
    allotment: int
    sold: int  # live reservations of the plan and type that spend the night
    left: int
    release_days: int | None = None
    held: int = 0  # rooms held for the plan (refused to other sales) on this night now


class AllotmentsOut(Out):
    rate_plan_id: uuid.UUID
    data: list[AllotmentNightOut]
