"""Room blocks' held rooms in house inventory: the part of pms.services.groups.room_blocks
that the reservations' cancel needs (a picked-up room goes back to its block), kept apart so
that reservations never import the block use cases (which import reservations).

A block HOLDS its unpicked rooms while it deducts and is not cut off; `InventoryDay.held` is the
sum over a property's blocks, moved only through the inventory package's holds (`apply_held` gives it a block's
before and after) under the booking's own night locks.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import date
from typing import Any

from pms.db.locking import for_update
from pms.domain.states import BlockStatus
from pms.errors import NotFound
from pms.models.room_blocks import RoomBlock, RoomBlockNight
from pms.schemas import room_blocks as s
from pms.services.inventory.holds import move_held
from pms.services.inventory.inventory import release_rooms

HOLDING = frozenset({BlockStatus.TENTATIVE, BlockStatus.DEFINITE, BlockStatus.ACTUAL})
Key = tuple[uuid.UUID, date]


def holds(block: RoomBlock) -> bool:
    """Whether the block holds its unpicked rooms out of house inventory now."""
    return bool(block.deducts) and block.cut_off_at is None and \
        BlockStatus(block.status) in HOLDING


def night_holds(block: RoomBlock, night: RoomBlockNight) -> bool:
    """Whether the night holds its unpicked rooms now: the block holds and the night's own
    cut-off has not given them back."""
    return holds(block) and night.cut_off_at is None


def night_held(block: RoomBlock, night: RoomBlockNight) -> int:
    return max(night.allotted - night.picked, 0) if night_holds(block, night) else 0


def night_cutoff(block: RoomBlock, night: RoomBlockNight) -> date:
    """The day the night's unpicked rooms go back to the house (its own, else the block's)."""
    return night.cutoff_date or block.cutoff_date


def held_map(block: RoomBlock, nights: Sequence[RoomBlockNight]) -> dict[Key, int]:
    return {(n.room_type_id, n.date): night_held(block, n) for n in nights}


def held_changes(before: dict[Key, int], after: dict[Key, int]) -> list[s.HeldChangeOut]:
    """The (room type, night) cells whose held rooms a change moved, in type and date order."""
    return [s.HeldChangeOut(room_type_id=k[0], date=k[1], held_before=before.get(k, 0),
                            held_after=after.get(k, 0))
            for k in sorted(set(before) | set(after), key=lambda k: (str(k[0]), k[1]))
            if before.get(k, 0) != after.get(k, 0)]


def _nights_of(block: RoomBlock, *, lock: bool = False) -> list[RoomBlockNight]:
    query = (RoomBlockNight.select().where(RoomBlockNight.block == block.id)
             .order_by(RoomBlockNight.room_type_id, RoomBlockNight.date))
    return list(for_update(query) if lock else query)


def grids_of(block_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[RoomBlockNight]]:
    """The grids of several blocks in one read (a list's page), each in block_out's order."""
    out: dict[uuid.UUID, list[RoomBlockNight]] = defaultdict(list)
    if block_ids:
        for n in (RoomBlockNight.select().where(RoomBlockNight.block.in_(list(block_ids)))
                  .order_by(RoomBlockNight.room_type_id, RoomBlockNight.date)):
            out[n.block_id].append(n)
    return out


def block_out(row: RoomBlock, nights: Sequence[RoomBlockNight] | None = None) -> s.BlockOut:
    if nights is None:
        nights = _nights_of(row)
    cells = [s.NightOut(room_type_id=n.room_type_id, date=n.date, allotted=n.allotted,
                        picked=n.picked, washed=n.washed, released=n.released,
                        held=night_held(row, n), cutoff_date=night_cutoff(row, n),
                        cut_off=n.cut_off_at is not None or row.cut_off_at is not None,
                        rate=n.rate)
             for n in nights]
    return s.BlockOut(
        id=row.id, property_id=row.property_id, code=row.code, name=row.name,
        arrival_date=row.arrival_date, departure_date=row.departure_date,
        cutoff_date=row.cutoff_date, rate_plan_id=row.rate_plan_id,
        company_profile_id=row.company_profile_id, market_segment=row.market_segment,
        source=row.source, owner=row.owner, folio_id=row.folio_id,
        master_folio_routing=row.master_folio_routing or "NONE", status=row.status,
        deducts=bool(row.deducts), cut_off_at=row.cut_off_at,
        allotted=sum(c.allotted for c in cells), picked=sum(c.picked for c in cells),
        held=sum(c.held for c in cells), allocation=cells, version=row.version,
        created_at=row.created_at, updated_at=row.updated_at)


def load_block(property_id: uuid.UUID, block_id: uuid.UUID, *, lock: bool = False) -> RoomBlock:
    query = RoomBlock.select().where((RoomBlock.id == block_id)
                                     & (RoomBlock.property == property_id))
    row = (for_update(query) if lock else query).first()
    if row is None:
        raise NotFound("no such block")
    return row


def apply_held(property_id: uuid.UUID, before: dict[Key, int], after: dict[Key, int], *,
               check: bool = True) -> None:
    """Move `InventoryDay.held` by after - before per (room type, night), under the night
    locks; a night that would hold more must have that many rooms for sale (409 naming the
    nights short), unless `check` is off: a block taking its own picked room back (a give-back)
    holds a room it contracted and never lost, so it is never re-checked against the house (a
    sell limit or out-of-order rooms may have cut the capacity below sold + held meanwhile;
    sellable clamps at 0, so nothing more is sold). Call inside the unit of work, after the
    block row's lock."""
    move_held(property_id, {k: after.get(k, 0) - before.get(k, 0)
                            for k in set(before) | set(after)}, check=check)


def held_counts(property_id: uuid.UUID, room_type_ids: Iterable[uuid.UUID], start: date,
                end: date) -> dict[Key, int]:
    """The reference recount of `InventoryDay.held` from the blocks themselves (tests and the
    receipt compare it with the stored column)."""
    ids = list(room_type_ids)
    out: dict[Key, int] = defaultdict(int)
    if not ids:
        return out
    query = (RoomBlockNight.select(RoomBlockNight, RoomBlock)
             .join(RoomBlock, on=(RoomBlockNight.block == RoomBlock.id))
             .where((RoomBlock.property == property_id) & RoomBlockNight.room_type_id.in_(ids)
                    & (RoomBlockNight.date >= start) & (RoomBlockNight.date < end)))
    for night in query:
        out[(night.room_type_id, night.date)] += night_held(night.block, night)
    return out


def give_back(property_id: uuid.UUID, block_id: uuid.UUID, room_type_id: uuid.UUID,
              nights: Sequence[date]) -> None:
    """A picked-up reservation is cancelled (its nights already released to the house by the
    caller, under the night locks): picked goes down; while the block holds, the room goes back
    to the block (held + 1), after the cut-off it stays with the house. Call inside the cancel's
    unit of work, with the block row locked first (`lock_for_cancel`)."""
    block = load_block(property_id, block_id)
    rows = list(RoomBlockNight.select().where(
        (RoomBlockNight.block == block_id) & (RoomBlockNight.room_type_id == room_type_id)
        & RoomBlockNight.date.in_(list(nights))))
    before = held_map(block, rows)
    for n in rows:
        if n.picked > 0:
            n.picked -= 1
            n.save()
    apply_held(property_id, before, held_map(block, rows), check=False)
    grid_changed(property_id, block_id, room_type_id, [n.date for n in rows])


def grid_changed(property_id: uuid.UUID, block_id: uuid.UUID, room_type_id: uuid.UUID,
                 nights: Iterable[date], *, overpicked: Sequence[date] = ()) -> None:
    """A pick-up or a give-back moved the block's grid (picked, held) inside the current unit
    of work: the block records `block:pickup_changed` at once, before the reservation's own
    event (its version goes up; `data` is the block as GET answers it, with `changed`: the
    cells moved; `overpicked`: the nights an overpick picked above the allotment, so the
    audit row of the change names them and who did it). Not while the block's own change runs (a cancel with its pick-ups:
    `block:cancelled` carries the grid; `quiet_grid`)."""
    from pms.db.current import current_unit_of_work
    from pms.schemas.common import to_data

    uow = current_unit_of_work()
    if uow is None or uow.__dict__.get("_quiet_grid") == block_id:
        return
    block = load_block(property_id, block_id)
    data = to_data(block_out(block))
    data["changed"] = [{"room_type_id": str(room_type_id), "date": d.isoformat()}
                       for d in sorted(set(nights))]
    if overpicked:
        data["overpicked"] = [{"room_type_id": str(room_type_id), "date": d.isoformat()}
                              for d in sorted(set(overpicked))]
    uow.record("block", "pickup_changed", block, data, property_id=property_id)


def quiet_grid(uow: Any, block_id: uuid.UUID) -> None:
    """The block's own change records the grid: no `block:pickup_changed` in `uow`."""
    uow.__dict__["_quiet_grid"] = block_id


def lock_for_cancel(property_id: uuid.UUID, block_id: uuid.UUID) -> None:
    """Take the block row's lock before the night locks (the lock order of pick-ups)."""
    try:
        load_block(property_id, block_id, lock=True)
    except NotFound:
        return


def release_stay_nights(property_id: uuid.UUID, block_id: uuid.UUID | None,
                        room_type_id: uuid.UUID, nights: Sequence[date], *,
                        reservation: Any = None) -> None:
    """A reservation gives `nights` up (a cancel, a no-show, an early departure, a date change's
    old nights), inside the caller's unit of work with the reservation locked: the house's
    sold count goes down; a picked-up one's block counts them unpicked and, while the block
    holds (before its cut-off), holds them again, else they stay with the house. Lock order:
    the block row, then the night locks."""
    if not nights:
        return
    if block_id is not None:
        lock_for_cancel(property_id, block_id)
    release_rooms(property_id, room_type_id, nights, reservation=reservation)
    if block_id is not None:
        give_back(property_id, block_id, room_type_id, nights)
