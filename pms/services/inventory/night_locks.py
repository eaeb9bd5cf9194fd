"""The nights' row locks of a room type (`inventory_day`, one row per room type and night), in
date order: every change of what can be sold, and of a rate plan's allotment, takes them
(pms.services.inventory.inventory re-exports both functions; the booking's fast path takes the
same rows inside `pms_take_nights`)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date

from pms.db import locking
from pms.db.database import db
from pms.models.inventory import InventoryDay
from pms.services.distribution import ari_events


def ensure_days(property_id: uuid.UUID, room_type_id: uuid.UUID, nights: Sequence[date]) -> None:
    """Insert the missing InventoryDay rows (concurrent inserts of the same row are ignored)."""
    have = {d for (d,) in InventoryDay.select(InventoryDay.date).where(
        (InventoryDay.room_type == room_type_id) & InventoryDay.date.in_(list(nights))).tuples()}
    missing = [n for n in nights if n not in have]
    if missing:
        InventoryDay.insert_many([
            {"id": uuid.uuid4(), "property": property_id, "room_type": room_type_id, "date": n}
            for n in missing
        ]).on_conflict_ignore().execute()


def lock_days(property_id: uuid.UUID, room_type_id: uuid.UUID,
              nights: Sequence[date], *, capacity: bool = False) -> list[InventoryDay]:
    """Ensure and lock the rows of `nights` in date order (PostgreSQL FOR UPDATE; SQLite's
    write transaction already holds the database lock). Call inside a write transaction.
    `capacity`: the change is to the house's rooms, not a sale (a sell limit, rooms out of
    order, rooms made, moved or deleted): the ARI event also says what each channel holding
    rooms may still sell (`ari_events.touch`)."""
    if not db.in_transaction():
        raise RuntimeError("inventory locks need a transaction (use unit_of_work)")

    def locked() -> list[InventoryDay]:  # a fresh query each time (peewee caches results)
        return list(locking.for_update(
            InventoryDay.select()
            .where((InventoryDay.room_type == room_type_id) & InventoryDay.date.in_(list(nights)))
            .order_by(InventoryDay.date)))

    rows = locked()
    if len(rows) < len(set(nights)):  # PERF: lock first; create a missing calendar only then
        ensure_days(property_id, room_type_id, nights)
        rows = locked()
    # every change of what can be sold locks its nights here (or takes them on the
    # booking's fast path, `_take_in_one`): the unit of work emits their ARI event
    ari_events.touch(property_id, room_type_id, nights, capacity=capacity)
    return rows
