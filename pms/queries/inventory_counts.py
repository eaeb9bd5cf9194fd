"""Recounts of a property's inventory per (room type, night): rooms, out-of-order and
out-of-service rooms from maintenance, and the stored sold and sell limit.

Reads only, no locks: call inside a scope. Shared by the booking path (`pms.services.inventory.inventory`
recounts under its row locks) and the read side (`pms.queries.inventory`, availability), so it
sits below both.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from datetime import date, timedelta

import peewee

from pms.db.database import db
from pms.domain.availability import NightCount
from pms.models.inventory import InventoryDay, Maintenance
from pms.models.property import Room


def physical_counts(property_id: uuid.UUID, room_type_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, int]:
    """Rooms per room type of the property (one GROUP BY)."""
    ids = list(room_type_ids)
    if not ids:
        return {}
    rows = (Room.select(Room.room_type, peewee.fn.COUNT(Room.id).alias("n"))
            .where((Room.property == property_id) & (Room.room_type.in_(ids)))
            .group_by(Room.room_type).tuples())
    counts = {rt: 0 for rt in ids}
    for rt, n in rows:
        counts[rt] = n
    return counts


def maintenance_counts(property_id: uuid.UUID, room_type_ids: Iterable[uuid.UUID], start: date,
                       end: date, *, exclude: uuid.UUID | None = None
                       ) -> dict[tuple[uuid.UUID, date], tuple[int, int]]:
    """(OOO, OOS) rooms per (room type, night) in [start, end), from active maintenance rows.

    A room counts once per night even when two periods overlap (OUT_OF_ORDER wins).
    """
    ids = list(room_type_ids)
    if not ids or end <= start:
        return {}
    query = (Maintenance.select(Maintenance.room, Room.room_type, Maintenance.kind,
                                Maintenance.from_date, Maintenance.to_date)
             .join(Room, on=(Maintenance.room == Room.id))
             .where((Maintenance.property == property_id) & Maintenance.active
                    & Room.room_type.in_(ids)
                    & (Maintenance.from_date < end) & (Maintenance.to_date >= start)))
    if exclude is not None:
        query = query.where(Maintenance.id != exclude)
    per_room: dict[tuple[uuid.UUID, uuid.UUID, date], str] = {}
    for room_id, rt, kind, from_date, to_date in query.tuples():
        night = max(from_date, start)
        last = min(to_date + timedelta(days=1), end)  # to_date is the last night
        while night < last:
            key = (rt, room_id, night)
            if per_room.get(key) != "OUT_OF_ORDER":
                per_room[key] = kind
            night += timedelta(days=1)
    out: dict[tuple[uuid.UUID, date], list[int]] = defaultdict(lambda: [0, 0])
    for (rt, _room, night), kind in per_room.items():
        out[(rt, night)][0 if kind == "OUT_OF_ORDER" else 1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def night_counts(property_id: uuid.UUID, room_type_ids: Iterable[uuid.UUID], start: date,
                 end: date) -> dict[tuple[uuid.UUID, date], NightCount]:
    """Exact counts per (room type, night): stored sold and sell limit, recounted rooms and
    maintenance, rooms held by room blocks. Three queries whatever the range."""
    ids = list(room_type_ids)
    if not ids:
        return {}
    physical = physical_counts(property_id, ids)
    maint = maintenance_counts(property_id, ids, start, end)
    # PERF: plain tuples straight from the cursor (ids as text), not model instances.
    query = (InventoryDay.select(InventoryDay.room_type.cast("text"), InventoryDay.date,
                                 InventoryDay.sell_limit, InventoryDay.sold, InventoryDay.held)
             .where((InventoryDay.property == property_id) & InventoryDay.room_type.in_(ids)
                    & (InventoryDay.date >= start) & (InventoryDay.date < end)))
    by_raw: dict[object, dict[date, tuple[int | None, int, int]]] = defaultdict(dict)
    for rt_raw, day, sell_limit, sold, held in db.execute(query).fetchall():
        by_raw[rt_raw][date.fromisoformat(day) if isinstance(day, str) else day] = (
            sell_limit, sold, held or 0)
    stored = {uuid.UUID(str(raw)): days for raw, days in by_raw.items()}
    nights = [start + timedelta(days=i) for i in range((end - start).days)]
    out: dict[tuple[uuid.UUID, date], NightCount] = {}
    for rt in ids:
        days = stored.get(rt, {})
        rooms = physical.get(rt, 0)
        for night in nights:
            sell_limit, sold, held = days.get(night, (None, 0, 0))
            ooo, oos = maint.get((rt, night), (0, 0))
            out[(rt, night)] = NightCount(physical=rooms, ooo=ooo, oos=oos,
                                          sell_limit=sell_limit, sold=sold, held=held)
    return out
