"""Moving or extending a room block's dates.

The same number of nights at other dates is a MOVE: every night of the grid shifts by the same
days with its contract (allotted, washed, released, its own cut-off date and cut-off). Other
dates RESIZE the block: the nights inside the new dates keep theirs, the rest are dropped and
the new nights start at 0 rooms per room type of the grid (or as the body's `allocation` says).
A night's `picked` counts the reservations actually on it, so it stays with its date.

The held rooms follow by the difference under the night locks, in (room type, date) order (the
one path of every block change, `block_changes._change_in`): a night that would hold more is
checked against the rooms for sale (409 room_type_unavailable naming the nights short).

A reservation of the block with a night outside the new dates is refused, named (409
block_pickups_outside_dates), unless `move_pickups` on a move: then every CONFIRMED reservation
of the block moves by the same days through its own date change (re-priced at the block's plan,
its own event), with the block's change, in ONE transaction: the grid first widens to cover
both the old and the new nights (each night allotted the larger of its old and new contract,
so each stay's give-back then pick-up fits), the stays move, and the grid is set to its new
contract; the house is then checked once against what it had before the move (a night where
sold + held grew past the capacity is 409 room_type_unavailable).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.locking import lock_errors
from pms.db.uow import UnitOfWork, one_transaction, read_scope, unit_of_work
from pms.domain.states import BLOCK_MACHINE, BlockStatus
from pms.errors import Conflict
from pms.models.inventory import InventoryDay
from pms.models.reservations import Reservation
from pms.models.room_blocks import RoomBlock, RoomBlockNight
from pms.schemas import room_blocks as s
from pms.schemas.common import to_data
from pms.schemas.date_bounds import check_dates
from pms.services.groups.room_block_inventory import (
    HOLDING,
    Key,
    _nights_of,
    apply_held,
    block_out,
    held_changes,
    held_map,
    load_block,
)
from pms.services.inventory.holds import shortage
from pms.services.inventory.inventory import lock_inventory, recount_locked

LIVE = ("CONFIRMED", "CHECKED_IN")


@dataclass
class _Cell:
    """A night's contract (what a move carries to the night's new date)."""

    allotted: int
    washed: int = 0
    released: int = 0
    cutoff_date: date | None = None
    cut_off_at: Any = None
    rate: Decimal | None = None  # the contracted price (moves with the night)


def _shift(body: s.BlockDatesIn, row: RoomBlock) -> int:
    """The days a move shifts the grid by (0: not a move)."""
    same_length = (body.departure_date - body.arrival_date) == \
        (row.departure_date - row.arrival_date)
    return (body.arrival_date - row.arrival_date).days if same_length else 0


def _new_cutoff(body: s.BlockDatesIn, row: RoomBlock) -> date:
    if body.cutoff_date is not None:
        return body.cutoff_date
    return body.arrival_date - (row.arrival_date - row.cutoff_date)


def _contract(ctx: Ctx, row: RoomBlock, nights: list[RoomBlockNight], body: s.BlockDatesIn,
              shift: int) -> dict[Key, _Cell]:
    """The grid's contract at the new dates (with the body's cells set on it)."""
    from pms.services.groups.room_blocks import _cell_cutoffs, _cell_rates, _cells

    step = timedelta(days=shift)
    out: dict[Key, _Cell] = {}
    if shift:
        for n in nights:
            out[(n.room_type_id, n.date + step)] = _Cell(
                n.allotted, n.washed, n.released,
                None if n.cutoff_date is None else n.cutoff_date + step, n.cut_off_at, n.rate)
    else:
        for n in nights:
            if body.arrival_date <= n.date < body.departure_date:
                out[(n.room_type_id, n.date)] = _Cell(n.allotted, n.washed, n.released,
                                                      n.cutoff_date, n.cut_off_at, n.rate)
        day = body.arrival_date
        while day < body.departure_date:
            for rt in {n.room_type_id for n in nights}:
                out.setdefault((rt, day), _Cell(0))
            day += timedelta(days=1)
    moved = RoomBlock(id=row.id, property=row.property_id, arrival_date=body.arrival_date,
                      departure_date=body.departure_date)
    cutoffs, rates = _cell_cutoffs(moved, body.allocation), _cell_rates(body.allocation)
    for key, allotted in _cells(moved, body.allocation).items():
        cell = out.setdefault(key, _Cell(0))
        cell.allotted = allotted
        cell.cutoff_date = cutoffs.get(key, cell.cutoff_date)
        cell.rate = rates.get(key, cell.rate)
    return out


def _stays(block_id: uuid.UUID) -> list[Reservation]:
    return list(Reservation.select().where(
        (Reservation.block_id == block_id) & Reservation.status.in_(list(LIVE)))
        .order_by(Reservation.arrival_date, Reservation.id))


def _refuse_outside(stays: list[Reservation], arrival: date, departure: date) -> None:
    out = [r for r in stays if r.arrival_date < arrival or r.departure_date > departure]
    if out:
        raise Conflict(
            f"{len(out)} reservations of the block have nights outside {arrival} to "
            f"{departure}: move them too (move_pickups=true on a move) or first",
            code="block_pickups_outside_dates",
            reservations=[{"id": str(r.id), "confirmation_number": r.confirmation_number,
                           "status": r.status, "arrival_date": r.arrival_date.isoformat(),
                           "departure_date": r.departure_date.isoformat()} for r in out])


def _write_grid(ctx: Ctx, row: RoomBlock, nights: list[RoomBlockNight],
                cells: dict[Key, _Cell]) -> list[RoomBlockNight]:
    """The rows as `cells` say (picked kept by date); a dropped or cut night with more picked
    than allotted is 409 allocation_below_pickup naming the nights."""
    by_key = {(n.room_type_id, n.date): n for n in nights}
    below = sorted({k[1] for k, n in by_key.items()
                    if n.picked > (cells[k].allotted if k in cells else 0)
                    and (k not in cells or cells[k].allotted < n.allotted)})
    if below:
        raise Conflict("the new dates leave nights with more rooms picked up than allotted: "
                       + ", ".join(d.isoformat() for d in below),
                       code="allocation_below_pickup", nights=[d.isoformat() for d in below])
    kept = []
    for key in sorted(set(by_key) | set(cells), key=lambda k: (str(k[0]), k[1])):
        night, cell = by_key.get(key), cells.get(key)
        if cell is None:
            RoomBlockNight.delete().where(RoomBlockNight.id == night.id).execute()
            continue
        if night is None:
            night = RoomBlockNight(env_id=ctx.env_id, block=row.id, room_type_id=key[0],
                                   date=key[1], picked=0)
        night.allotted, night.washed, night.released = cell.allotted, cell.washed, cell.released
        night.cutoff_date, night.cut_off_at = cell.cutoff_date, cell.cut_off_at
        night.rate = cell.rate
        night.save(force_insert=key not in by_key)
        kept.append(night)
    return kept


def _check_state(row: RoomBlock) -> None:
    if BlockStatus(row.status) not in (*HOLDING, BlockStatus.INQUIRY):
        BLOCK_MACHINE.transition(row.status, "edit")  # 409 invalid_transition


def change_dates(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID, body: s.BlockDatesIn,
                 *, dry_run: bool = False) -> s.BlockChangeOut:
    """Move or resize the block (see the module). Raises: NotFound. ValidationFailed (422):
    dates, cells outside the new dates, far dates. Conflict (409): block_pickups_outside_dates,
    allocation_below_pickup, room_type_unavailable, invalid_transition (CANCELLED, LOST)."""
    from pms.services.groups.block_changes import _change
    from pms.services.groups.room_blocks import _check_dates

    check_dates(body)
    with read_scope(ctx):
        row = load_block(property_id, block_id)
        stays = _stays(block_id)
    cutoff = _new_cutoff(body, row)
    _check_dates(body.arrival_date, body.departure_date, cutoff)
    shift = _shift(body, row)
    if shift and body.move_pickups and any(r.status == "CONFIRMED" for r in stays):
        return _move_with_pickups(ctx, property_id, block_id, body, cutoff, dry_run=dry_run)

    def mutate(uow: UnitOfWork, row: RoomBlock, nights: list[RoomBlockNight]
               ) -> list[RoomBlockNight]:
        _check_state(row)
        _refuse_outside(_stays(row.id), body.arrival_date, body.departure_date)
        step = _shift(body, row)
        cells = _contract(ctx, row, nights, body, step)
        row.cutoff_date = _new_cutoff(body, row)
        row.arrival_date, row.departure_date = body.arrival_date, body.departure_date
        return _write_grid(ctx, row, nights, cells)

    return _change(ctx, property_id, block_id, "dates_changed", dry_run=dry_run, mutate=mutate)


def _lock_counts(property_id: uuid.UUID, keys: set[Key]) -> dict[Key, int]:
    """Lock the nights of `keys` (room type, date order) and read sold + held on each."""
    by_type: dict[uuid.UUID, list[date]] = {}
    for rt, d in keys:
        by_type.setdefault(rt, []).append(d)
    lock_inventory(property_id, [(rt, sorted(days)) for rt, days in by_type.items()])
    out: dict[Key, int] = {}
    for rt, days in by_type.items():
        for r in InventoryDay.select().where((InventoryDay.room_type == rt)
                                             & InventoryDay.date.in_(days)):
            out[(rt, r.date)] = r.sold + r.held
    return out


def _move_with_pickups(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID,
                       body: s.BlockDatesIn, cutoff: date, *, dry_run: bool
                       ) -> s.BlockChangeOut:
    from pms.schemas.reservations import ReservationPatch
    from pms.services.groups.pickups import block_pickup
    from pms.services.groups.room_blocks import _DryRun
    from pms.services.reservations.reservations import edit_reservation

    try:
        with lock_errors(), one_transaction(ctx):
            with unit_of_work(ctx):  # widen the grid to the old and the new nights
                row = load_block(property_id, block_id, lock=True)
                _check_state(row)
                nights = _nights_of(row, lock=True)
                before_out = to_data(block_out(row, nights))
                held_before = held_map(row, nights)
                shift = _shift(body, row)
                cells = _contract(ctx, row, nights, body, shift)
                stays = _stays(row.id)
                moving = [r for r in stays if r.status == "CONFIRMED"]
                step = timedelta(days=shift)
                staying = [r for r in stays if r.status != "CONFIRMED"]
                _refuse_outside(staying, body.arrival_date, body.departure_date)
                keys = set(held_before) | set(cells)
                for r in moving:
                    day = r.arrival_date
                    while day < r.departure_date + step:
                        keys.add((r.room_type_id, day))
                        day += timedelta(days=1)
                used_before = _lock_counts(property_id, keys)
                wide = {(n.room_type_id, n.date): _Cell(n.allotted, n.washed, n.released,
                                                        n.cutoff_date, n.cut_off_at, n.rate)
                        for n in nights}
                for key, cell in cells.items():
                    have = wide.get(key)
                    if have is None or have.allotted < cell.allotted:
                        wide[key] = _Cell(cell.allotted, cell.washed, cell.released,
                                          cell.cutoff_date, cell.cut_off_at, cell.rate)
                nights = _write_grid(ctx, row, nights, wide)
                apply_held(property_id, held_before, held_map(row, nights), check=False)
                row.arrival_date = min(row.arrival_date, body.arrival_date)
                row.departure_date = max(row.departure_date, body.departure_date)
                row.save()
            for r in moving:  # each through its own date change, its event and audit row
                edit_reservation(ctx, property_id, r.id, ReservationPatch(
                    arrival_date=r.arrival_date + step, departure_date=r.departure_date + step),
                    pickup=block_pickup(property_id, block_id))
            with unit_of_work(ctx) as uow:  # the new contract, checked against the house
                row = load_block(property_id, block_id, lock=True)
                nights = _nights_of(row, lock=True)
                held_wide = held_map(row, nights)
                nights = _write_grid(ctx, row, nights, cells)
                held_after = held_map(row, nights)
                apply_held(property_id, held_wide, held_after, check=False)
                _check_house(property_id, keys, used_before)
                row.cutoff_date = cutoff
                row.arrival_date, row.departure_date = body.arrival_date, body.departure_date
                row.updated_at = ctx.now
                row.save()
                out = block_out(row, nights)
                changes = held_changes(held_before, held_after)
                if not dry_run:
                    uow.record("block", "dates_changed", row, to_data(out), before=before_out,
                               property_id=property_id)
                    out.version = row.version  # the block at its new version, as the event
                result = s.BlockChangeOut(dry_run=dry_run, block=out, held_changes=changes)
            if dry_run:
                raise _DryRun(result)
    except _DryRun as dry:
        return dry.result
    return result


def _check_house(property_id: uuid.UUID, keys: set[Key], used_before: dict[Key, int]) -> None:
    """After the move (the nights locked): a night whose sold + held grew past its capacity
    is refused (409 room_type_unavailable naming the nights)."""
    by_type: dict[uuid.UUID, list[date]] = {}
    for rt, d in keys:
        by_type.setdefault(rt, []).append(d)
    short: list[Key] = []
    for rt, days in sorted(by_type.items(), key=lambda kv: str(kv[0])):
        rows = list(InventoryDay.select().where((InventoryDay.room_type == rt)
                                                & InventoryDay.date.in_(days)))
        counts = recount_locked(property_id, rows, min(days), max(days) + timedelta(days=1))
        for r in rows:
            c = counts[(rt, r.date)]
            if c.sold + c.held > c.capacity and \
                    c.sold + c.held > used_before.get((rt, r.date), 0):
                short.append((rt, r.date))
    if short:
        raise shortage(short, "not enough rooms of this type are for sale")
