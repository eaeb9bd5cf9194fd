"""A room block's changes that move held rooms: its state transitions (a cancel gives the
picked-up stays' rooms back), the allocation grid set anew, a wash, the cut-off (the block's
own, or the nights due at the night audit). Each runs through `_change_in`: lock the block,
compute what it holds before and after (`held_map`), mutate, apply the difference under the
booking's night locks (`apply_held`, 409 when a night would hold more than is for sale).
Dry runs run the whole change, checks and locks included, and roll it back.

Lock order, everywhere: the reservation row (a cancel), the block row, the inventory rows.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from datetime import date

from pms.context import Ctx
from pms.db.locking import lock_errors
from pms.db.uow import UnitOfWork, unit_of_work
from pms.domain.states import BLOCK_DEDUCTING, BLOCK_MACHINE, BlockStatus
from pms.errors import Conflict
from pms.models.property import RoomType
from pms.models.room_blocks import RoomBlock, RoomBlockNight
from pms.schemas import room_blocks as s
from pms.schemas.common import to_data
from pms.services.groups.room_block_inventory import (
    HOLDING,
    _nights_of,
    apply_held,
    block_out,
    held_changes,
    held_map,
    load_block,
    night_cutoff,
    night_held,
    quiet_grid,
)
from pms.services.groups.room_blocks import (
    _cell_cutoffs,
    _cell_rates,
    _cells,
    _DryRun,
    _invalid,
    _set_allocation,
)
from pms.services.references import unknown_reference

Mutate = Callable[[UnitOfWork, RoomBlock, list[RoomBlockNight]], list[RoomBlockNight]]


def _change_in(uow: UnitOfWork, ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID,
               action: str, *, dry_run: bool, mutate: Mutate, reason: str | None = None
               ) -> s.BlockChangeOut:
    """Inside `uow`: lock the block, let `mutate` change it and its nights, move held rooms by
    the difference (checked under the night locks), record `block.{action}` (not on a dry
    run: the caller rolls it back)."""
    row = load_block(property_id, block_id, lock=True)
    nights = _nights_of(row, lock=True)
    before_out = to_data(block_out(row, nights))
    held_before = held_map(row, nights)
    nights = mutate(uow, row, nights)
    held_after = held_map(row, nights)
    apply_held(property_id, held_before, held_after)
    row.updated_at = ctx.now
    row.save()
    out = block_out(row, nights)
    changes = held_changes(held_before, held_after)
    if not dry_run:
        uow.record("block", action, row, to_data(out), before=before_out, reason=reason,
                   property_id=property_id)
        out.version = row.version  # the answer is the block at its new version, as the event
    return s.BlockChangeOut(dry_run=dry_run, block=out, held_changes=changes)


def _change(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID, action: str, *,
            dry_run: bool, mutate: Mutate, reason: str | None = None) -> s.BlockChangeOut:
    """`_change_in` in a unit of work of its own; a dry run answers the same and rolls
    everything back."""
    try:
        with lock_errors(), unit_of_work(ctx) as uow:
            result = _change_in(uow, ctx, property_id, block_id, action, dry_run=dry_run,
                                mutate=mutate, reason=reason)
            if dry_run:
                raise _DryRun(result)
    except _DryRun as dry:
        return dry.result
    return result


def _tentative_deducts(ctx: Ctx, property_id: uuid.UUID) -> bool:
    from pms.services.catalog.settings import effective

    return bool(effective(ctx, property_id).get("blocks", {}).get(
        "tentative_deducts_inventory", False))


def transition(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID, trigger: str, *,
               dry_run: bool = False, cancel_picked: bool = False) -> s.BlockChangeOut:
    """Move the block by BLOCK_MACHINE (409 invalid_transition otherwise).

    Into DEFINITE (or TENTATIVE with the setting on) the block starts holding its unpicked rooms:
    checked under the night locks (409 room_type_unavailable naming the nights short).
    `release` (DEFINITE -> TENTATIVE) only with nothing picked up (409 block_has_pickup);
    `lose` only with nothing picked up (409 block_has_pickup: cancel the block with
    cancel_picked instead); `cancel` with picked-up rooms only with `cancel_picked`, which
    cancels each CONFIRMED reservation of the block first through the reservation's own cancel
    (rooms and room holds released, the cancellation fee, its event), in one unit of work with
    the block's change. CANCELLED and LOST hold nothing.
    """
    tentative_deducts = (_tentative_deducts(ctx, property_id)
                         if trigger in ("tentative", "release") else False)

    def mutate(uow: UnitOfWork, row: RoomBlock, nights: list[RoomBlockNight]
               ) -> list[RoomBlockNight]:
        new = BLOCK_MACHINE.transition(row.status, trigger)
        picked = sum(n.picked for n in nights)
        if trigger in ("release", "lose") and picked:
            verb = "released" if trigger == "release" else "lost"
            raise Conflict(f"the block has {picked} rooms picked up: it cannot be {verb}",
                           code="block_has_pickup", count=picked)
        if trigger == "cancel" and picked and not cancel_picked:
            raise Conflict(f"the block has {picked} rooms picked up: send cancel_picked "
                           "to cancel them too", code="block_has_pickup", count=picked)
        if trigger == "cancel" and _live_pickups(row.id):  # picked up while we cancelled
            raise Conflict("a reservation was picked up meanwhile: retry",
                           code="block_has_pickup", count=picked)
        row.status = new.value
        if new in BLOCK_DEDUCTING:
            row.deducts = True
        elif new == BlockStatus.TENTATIVE:
            row.deducts = tentative_deducts
        else:
            row.deducts = False
        return nights

    action = {"actualize": "actual", "release": "released", "tentative": "tentative",
              "definite": "definite", "cancel": "cancelled", "lose": "lost"}.get(trigger,
                                                                               trigger)
    if trigger != "cancel" or not cancel_picked:
        return _change(ctx, property_id, block_id, action, dry_run=dry_run, mutate=mutate)
    try:
        with lock_errors(), unit_of_work(ctx) as uow:
            _cancel_pickups(ctx, uow, property_id, block_id)
            result = _change_in(uow, ctx, property_id, block_id, action, dry_run=dry_run,
                                mutate=mutate)
            if dry_run:
                raise _DryRun(result)
    except _DryRun as dry:
        return dry.result
    return result


def _live_pickups(block_id: uuid.UUID) -> list[uuid.UUID]:
    from pms.models.reservations import Reservation

    return [r.id for r in Reservation.select(Reservation.id).where(
        (Reservation.block_id == block_id) & (Reservation.status == "CONFIRMED"))
        .order_by(Reservation.id)]


def _cancel_pickups(ctx: Ctx, uow: UnitOfWork, property_id: uuid.UUID,
                    block_id: uuid.UUID) -> None:
    """Cancel the block's CONFIRMED reservations (consented by cancel_picked), each through the
    reservation's own cancel (`cancel_locked`: nights back to the block, room hold released,
    cancellation fee, its event), in a guest cancel's lock order: every reservation row (in
    id order), then the block row, then the night locks; the block's change follows."""
    from pms.services.reservations.reservations import cancel_locked, load_reservation

    load_block(property_id, block_id)  # 404 before any lock
    quiet_grid(uow, block_id)  # block:cancelled carries the grid
    # every reservation row first (in id order), before the first cancel takes the block's lock
    locked = [load_reservation(ctx, property_id, rid, lock=True)
              for rid in _live_pickups(block_id)]
    for res in locked:
        if res.status == "CONFIRMED" and res.block_id == block_id:
            cancel_locked(ctx, uow, property_id, res)


def set_allocation(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID, body: s.AllocationIn,
                   *, dry_run: bool = False) -> s.BlockChangeOut:
    """PUT the allocation grid's cells (others keep theirs): never below what is picked up
    (409 allocation_below_pickup); more rooms held are checked under the night locks (409)."""
    def mutate(uow: UnitOfWork, row: RoomBlock, nights: list[RoomBlockNight]
               ) -> list[RoomBlockNight]:
        if BlockStatus(row.status) not in (*HOLDING, BlockStatus.INQUIRY):
            BLOCK_MACHINE.transition(row.status, "edit")
        return _set_allocation(ctx, row, nights, _cells(row, body.allocation),
                               _cell_cutoffs(row, body.allocation),
                               _cell_rates(body.allocation))

    return _change(ctx, property_id, block_id, "allocation_changed", dry_run=dry_run,
                   mutate=mutate)


def wash(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID, body: s.WashIn, *,
         dry_run: bool = False) -> s.BlockChangeOut:
    """Reduce each night's allotment by `rooms` or by `percent` (rounded down), never below the
    rooms picked up; the washed rooms go back to the house."""
    if (body.rooms is None) == (body.percent is None):
        raise _invalid("rooms", "send either rooms or percent")

    def mutate(uow: UnitOfWork, row: RoomBlock, nights: list[RoomBlockNight]
               ) -> list[RoomBlockNight]:
        BLOCK_MACHINE.transition(row.status, "edit")
        if body.room_type_id is not None and not RoomType.select(RoomType.id).where(
                (RoomType.id == body.room_type_id)
                & (RoomType.property == row.property_id)).exists():
            raise unknown_reference("room_type_id", "room_type_id: not a room type of this "
                                                    "property")
        for n in nights:
            if body.room_type_id is not None and n.room_type_id != body.room_type_id:
                continue
            want = body.rooms if body.rooms is not None else \
                math.floor(n.allotted * (body.percent or 0) / 100)
            cut = min(want, max(n.allotted - n.picked, 0))
            if cut:
                n.allotted -= cut
                n.washed += cut
                n.save()
        return nights

    return _change(ctx, property_id, block_id, "washed", dry_run=dry_run, mutate=mutate)


def _cut_off_mutation(ctx: Ctx) -> Mutate:
    def mutate(uow: UnitOfWork, row: RoomBlock, nights: list[RoomBlockNight]
               ) -> list[RoomBlockNight]:
        BLOCK_MACHINE.transition(row.status, "cut_off")
        if row.cut_off_at is not None:
            raise Conflict("the block is cut off already", code="block_cut_off")
        held = {n.id: night_held(row, n) for n in nights}
        row.cut_off_at = ctx.now
        for n in nights:
            if n.cut_off_at is None:  # a night cut off on its own date keeps its release
                n.released = held[n.id]
                n.cut_off_at = ctx.now
                n.save()
        return nights

    return mutate


def cut_off(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID, *,
            dry_run: bool = False) -> s.BlockChangeOut:
    """Release the unpicked rooms to the house, once (409 block_cut_off on a repeat).
    Later pick-ups sell from the house; a cancelled pick-up goes back to the house."""
    return _change(ctx, property_id, block_id, "cut_off", dry_run=dry_run,
                   mutate=_cut_off_mutation(ctx))


def due_for_cut_off(property_id: uuid.UUID, business_date: date) -> list[uuid.UUID]:
    """Blocks of the property that hold or may hold rooms and have a night whose cut-off date
    (its own, else the block's) has come by `business_date` (call inside a scope)."""
    live = ((RoomBlock.property == property_id) & RoomBlock.cut_off_at.is_null()
            & RoomBlock.status.in_([st.value for st in HOLDING]))
    whole = RoomBlock.select(RoomBlock.id).where(live & (RoomBlock.cutoff_date <= business_date))
    by_night = (RoomBlock.select(RoomBlock.id)
                .join(RoomBlockNight, on=(RoomBlockNight.block == RoomBlock.id))
                .where(live & RoomBlockNight.cut_off_at.is_null()
                       & (RoomBlockNight.cutoff_date <= business_date)))
    return sorted({r.id for r in whole} | {r.id for r in by_night}, key=str)


def _nights_cut_off_mutation(ctx: Ctx, business_date: date) -> Mutate:
    """The nights whose own cut-off date has come give their unpicked rooms back (released,
    cut_off_at set); the block cut off whole once no night is left to hold."""
    whole = _cut_off_mutation(ctx)

    def mutate(uow: UnitOfWork, row: RoomBlock, nights: list[RoomBlockNight]
               ) -> list[RoomBlockNight]:
        left = [n for n in nights if n.cut_off_at is None]
        due = [n for n in left if night_cutoff(row, n) <= business_date]
        if len(due) == len(left):
            return whole(uow, row, nights)
        BLOCK_MACHINE.transition(row.status, "edit")
        for n in due:
            n.released = night_held(row, n)
            n.cut_off_at = ctx.now
            n.save()
        return nights

    return mutate


def cut_off_due_in(uow: UnitOfWork, property_id: uuid.UUID, business_date: date
                   ) -> list[str]:
    """The night audit's step, inside its unit of work: every block night whose cut-off date
    (its own, else the block's) is `business_date` or earlier (the new business date the audit
    rolls to) gives its unpicked rooms back to the house: `block.cut_off` when no night of the
    block is left holding, else `block.nights_cut_off`. Returns the blocks' codes."""
    done = []
    for block_id in due_for_cut_off(property_id, business_date):
        row = load_block(property_id, block_id)
        left = [n for n in _nights_of(row) if n.cut_off_at is None]
        whole = all(night_cutoff(row, n) <= business_date for n in left)
        out = _change_in(uow, uow.ctx, property_id, block_id,
                         "cut_off" if whole else "nights_cut_off", dry_run=False,
                         mutate=_nights_cut_off_mutation(uow.ctx, business_date),
                         reason=f"night audit: cut-off date reached on {business_date}")
        done.append(out.block.code)
    return done
