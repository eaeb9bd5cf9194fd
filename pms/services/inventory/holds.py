"""Rooms held out of house inventory by room blocks: the inventory package's surface for
`InventoryDay.held`, so every write of an inventory night stays in this package.

Groups decide how many rooms each block holds per night (pms.services.groups); these use cases
move the stored sum under the night locks, in (room type, date) order, and apply the one rule a
block's rooms obey: a night that holds MORE must have that many rooms for sale, except a block
taking back a room it contracted and never lost (a give-back or a date move of its own rooms),
which is never re-checked against the house; a held room becomes a sold one only while the
rooms in service can carry it.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from datetime import date, timedelta

import peewee

from pms import wiring
from pms.db.locking import lock_errors
from pms.domain.availability import usable
from pms.errors import RoomTypeUnavailable
from pms.models.inventory import InventoryDay
from pms.services.inventory.inventory import lock_inventory, recount_locked, refresh_counts
from pms.services.inventory.night_locks import lock_days

Key = tuple[uuid.UUID, date]


def shortage(nights: Iterable[Key], detail: str) -> RoomTypeUnavailable:
    days = sorted({d for _, d in nights})
    return RoomTypeUnavailable(f"{detail} on {', '.join(d.isoformat() for d in days)}",
                               nights=[d.isoformat() for d in days])


def move_held(property_id: uuid.UUID, delta: dict[Key, int], *, check: bool = True) -> None:
    """Move `InventoryDay.held` by `delta` per (room type, night), under the night locks. With
    `check`, a night that would hold more must have that many rooms for sale (409 naming the
    nights short); without it (a block taking its own room back) nothing is re-checked: a sell
    limit or out-of-order rooms may have cut the capacity below sold + held meanwhile, and
    sellable clamps at 0, so nothing more is sold. Held never goes below 0. Call inside the
    unit of work, after the block row's lock."""
    delta = {k: v for k, v in delta.items() if v}
    if not delta:
        return
    by_type: dict[uuid.UUID, list[date]] = defaultdict(list)
    for rt, day in delta:
        by_type[rt].append(day)
    with lock_errors():
        lock_inventory(property_id, [(rt, sorted(days)) for rt, days in by_type.items()])
        for rt, days in sorted(by_type.items(), key=lambda kv: str(kv[0])):
            rows = list(InventoryDay.select().where(
                (InventoryDay.room_type == rt) & InventoryDay.date.in_(days)))
            if check and any(delta[(rt, r.date)] > 0 for r in rows):
                counts = recount_locked(property_id, rows, min(days), max(days) + timedelta(1))
                short = [(rt, r.date) for r in rows
                         if counts[(rt, r.date)].sellable < delta[(rt, r.date)]]
                if short:
                    raise shortage(short, "not enough rooms of this type are for sale")
                if wiring.current().pause_after_check is not None:  # TEST-ONLY: the race window
                    wiring.current().pause_after_check()
            groups: dict[int, list[uuid.UUID]] = defaultdict(list)
            for r in rows:
                groups[delta[(rt, r.date)]].append(r.id)
            for amount, ids in groups.items():
                InventoryDay.update(held=peewee.Case(
                    None, [(InventoryDay.held + amount >= 0, InventoryDay.held + amount)], 0)
                ).where(InventoryDay.id.in_(ids)).execute()


def convert_held(property_id: uuid.UUID, room_type_id: uuid.UUID, nights: list[date],
                 count: int) -> None:
    """`count` held rooms become sold ones on `nights` (house availability unchanged), under
    the night locks; never above the rooms in service (409 naming the nights)."""
    with lock_errors():
        rows = lock_days(property_id, room_type_id, nights)
        counts = recount_locked(property_id, rows, nights[0], nights[-1] + timedelta(days=1))
        short = [(room_type_id, r.date) for r in rows
                 if r.sold + count > usable(counts[(room_type_id, r.date)].physical,
                                            counts[(room_type_id, r.date)].ooo,
                                            counts[(room_type_id, r.date)].oos)]
        if short:
            raise shortage(short, "no room of this type is in service")
        refresh_counts(rows, counts)  # the stored snapshot, as every take writes it
        day = InventoryDay
        day.update(sold=day.sold + count, held=peewee.Case(
            None, [(day.held >= count, day.held - count)], 0)).where(
            day.id.in_([r.id for r in rows])).execute()
