"""Read side of inventory: exact counts per room type and night (recounted, not trusted).

No writes and no transactions beyond the read scope.
"""

from __future__ import annotations

import uuid
from datetime import date, timedelta

from pms.context import Ctx
from pms.db.uow import read_scope
from pms.domain.stay import date_span
from pms.errors import ValidationFailed
from pms.models.property import RoomType
from pms.queries.inventory_counts import night_counts
from pms.queries.lookups import load_property
from pms.schemas import inventory as s

MAX_READ_DAYS = 366


def inventory_out(property_id: uuid.UUID, room_type_ids: list[uuid.UUID], start: date,
                  end: date) -> s.InventoryOut:
    """Counts for [start, end) per room type, in (room type order given, date) order. Call
    inside a scope."""
    counts = night_counts(property_id, room_type_ids, start, end)
    data = []
    for rt in room_type_ids:
        day = start
        while day < end:
            c = counts[(rt, day)]
            data.append(s.InventoryDayOut(room_type_id=rt, date=day, physical=c.physical,
                                          out_of_order=c.ooo, out_of_service=c.oos,
                                          sell_limit=c.sell_limit, sold=c.sold,
                                          sellable=c.sellable))
            day += timedelta(days=1)
    return s.InventoryOut(property_id=property_id, data=data)


def list_inventory(ctx: Ctx, property_id: uuid.UUID, query: s.InventoryQuery) -> s.InventoryOut:
    """Inventory of a property (or one room type) for from_date..to_date (at most 366 days).

    Raises:
        NotFound: no such property. ValidationFailed: bad range, unknown room type.
    """
    date_span(query.from_date, query.to_date, max_days=MAX_READ_DAYS)
    with read_scope(ctx):
        load_property(property_id)
        types = RoomType.select(RoomType.id).where(RoomType.property == property_id)
        if query.room_type_id is not None:
            types = types.where(RoomType.id == query.room_type_id)
        ids = [r.id for r in types.order_by(RoomType.sort_order, RoomType.code)]
        if query.room_type_id is not None and not ids:
            raise ValidationFailed("room_type_id is not a room type of this property",
                                   errors=[{"field": "room_type_id", "message": "unknown room type"}])
        return inventory_out(property_id, ids, query.from_date,
                             query.to_date + timedelta(days=1))
