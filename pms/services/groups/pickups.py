"""Picking up a room block: a reservation made in the block, its inventory step, and the pick-up
receipt.

Pick-up converts a held room into a sold one (sold + n, held - n: house availability unchanged)
and never exceeds the allocation (409 `block_allocation_exhausted` naming the nights); a block
that holds nothing (TENTATIVE without the setting, or cut off) sells from the house
(`take_rooms`). With `overpick` (the scope `hotel:pms:blocks:overpick`), a night whose allocation
is exhausted sells a room from the house, its availability checked under the night locks, and
counts it picked above the allotment. Lock order as everywhere (pms.services.groups.room_blocks):
the block row, then the inventory rows.
"""


from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date
from typing import Any

from pms import wiring
from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import read_scope
from pms.domain.states import BLOCK_MACHINE
from pms.errors import AlreadyExists, Conflict
from pms.models.room_blocks import RoomBlockNight
from pms.schemas import room_blocks as s
from pms.services.groups.room_block_inventory import (
    _nights_of,
    grid_changed,
    load_block,
    night_held,
    night_holds,
)
from pms.services.groups.room_blocks import _invalid
from pms.services.inventory.holds import convert_held
from pms.services.inventory.inventory import (
    lock_days,
    take_rooms,
)
from pms.services.references import unknown_reference

FORMULA = "sellable = max(min(physical - OOO - OOS, sell limit) - sold - held by blocks, 0)"


# -- pick-up ---------------------------------------------------------------------------------------

class _Pickup:
    """The inventory step of a picked-up reservation, run by `create_reservation` in its unit
    of work instead of the house's take. `overpick`: a night whose allocation is exhausted
    sells a room from the house (its availability checked under the night locks) and counts
    it picked above the allotment, instead of the 409."""

    def __init__(self, property_id: uuid.UUID, block_id: uuid.UUID, *,
                 overpick: bool = False) -> None:
        self.property_id, self.block_id, self.overpick = property_id, block_id, overpick
        self.overpicked: list[date] = []

    def take(self, room_type_id: uuid.UUID, nights: Sequence[date], count: int = 1) -> None:
        block = load_block(self.property_id, self.block_id, lock=True)
        BLOCK_MACHINE.transition(block.status, "pick")
        rows = list(for_update(RoomBlockNight.select().where(
            (RoomBlockNight.block == block.id) & (RoomBlockNight.room_type_id == room_type_id)
            & RoomBlockNight.date.in_(list(nights))).order_by(RoomBlockNight.date)))
        by_day = {n.date: n for n in rows}
        missing = [(room_type_id, d) for d in nights if d not in by_day]
        short = missing + [(room_type_id, d) for d in nights if d in by_day
                           and by_day[d].allotted - by_day[d].picked < count]
        if short and (missing or not self.overpick):
            days = sorted({d for _, d in short})
            raise Conflict("the block's allocation is exhausted on "
                           + ", ".join(d.isoformat() for d in days),
                           code="block_allocation_exhausted",
                           nights=[d.isoformat() for d in days])
        if wiring.current().pause_after_check is not None:  # TEST-ONLY: the race window
            wiring.current().pause_after_check()
        over = {d for _, d in short}
        held = sorted(d for d in nights if d not in over and night_holds(block, by_day[d]))
        house = sorted(d for d in nights if d not in held)
        if held and house:  # both parts under the nights' locks, taken in date order
            with lock_errors():
                lock_days(self.property_id, room_type_id, sorted(nights))
        if held:
            self._convert(room_type_id, held, count)
        if house:  # overpicked or released nights (or a block that holds nothing)
            take_rooms(self.property_id, room_type_id, house, count)
        self.overpicked = sorted(over)
        # PERF: one UPDATE for every night (the rows are locked above)
        RoomBlockNight.update(picked=RoomBlockNight.picked + count).where(
            RoomBlockNight.id.in_([n.id for n in rows])).execute()
        grid_changed(self.property_id, block.id, room_type_id, nights,
                     overpicked=self.overpicked)

    def _convert(self, room_type_id: uuid.UUID, nights: list[date], count: int) -> None:
        """A held room becomes a sold one (house availability unchanged), under the night
        locks; never above the rooms in service (409 naming the nights)."""
        convert_held(self.property_id, room_type_id, nights, count)


def block_pickup(property_id: uuid.UUID, block_id: uuid.UUID) -> _Pickup:
    """The pick-up step a reservation's date change in the block runs (pms.services.groups.
    block_bulk): the new nights picked up again under the block's and the nights' locks."""
    return _Pickup(property_id, block_id)


def pick_up(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID, body: s.PickupIn) -> Any:
    """The reservation `pick_up_folding` answers (made now, or folded into)."""
    return pick_up_folding(ctx, property_id, block_id, body)[0]


def pick_up_folding(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID, body: s.PickupIn,
                    *, overpick: bool = False) -> tuple[Any, bool]:
    """A reservation in the block at the block's rate plan, dates inside the block's:
    (reservation, created). A confirmation_number already booked in THIS block folds into that
    reservation (created False); one booked outside it is refused.

    Raises: NotFound (block). ValidationFailed: another rate plan, dates outside the block.
    Conflict: block_allocation_exhausted (409, naming the nights), invalid_transition (the
    block is INQUIRY, CANCELLED or LOST), confirmation_number_taken (the number belongs to a
    reservation outside this block); as create_reservation otherwise.
    """
    import msgspec

    from pms.schemas.reservations import ReservationIn
    from pms.services.reservations.reservations import create_reservation

    with read_scope(ctx):
        block = load_block(property_id, block_id)
    BLOCK_MACHINE.transition(block.status, "pick")
    if body.rate_plan_id is not None and body.rate_plan_id != block.rate_plan_id:
        raise _invalid("rate_plan_id", "a block's reservations are at the block's rate plan")
    if body.arrival_date < block.arrival_date or body.departure_date > block.departure_date:
        raise _invalid("arrival_date", f"the block runs from {block.arrival_date} to "
                                       f"{block.departure_date}")
    with read_scope(ctx):
        in_grid = RoomBlockNight.select(RoomBlockNight.id).where(
            (RoomBlockNight.block == block.id)
            & (RoomBlockNight.room_type_id == body.room_type_id)).exists()
    if not in_grid:
        raise unknown_reference("room_type_id", "room_type_id: not a room type of the block's "
                                                "allocation")
    fields = {f: getattr(body, f) for f in body.__struct_fields__}
    fields["rate_plan_id"] = block.rate_plan_id
    if fields.get("company_profile_id") is None and block.company_profile_id is not None:
        fields["company_profile_id"] = block.company_profile_id
    inner = msgspec.convert(msgspec.to_builtins(fields), ReservationIn)
    row, created = create_reservation(ctx, property_id, inner,
                                      pickup=_Pickup(property_id, block.id,
                                                     overpick=overpick))
    if not created and row.block_id != block.id:
        raise AlreadyExists("a reservation outside this block has this confirmation_number",
                            code="confirmation_number_taken")
    return row, created


# -- the pick-up receipt ---------------------------------------------------------------------------

def pickup_receipt(ctx: Ctx, property_id: uuid.UUID, block_id: uuid.UUID
                   ) -> s.PickupReceiptOut:
    """Per room type and night: the block's allotted, picked, released, washed and held rooms,
    and the house's arithmetic (the reference formula) with the held rooms of every block."""
    from pms.queries.inventory_counts import night_counts

    with read_scope(ctx):
        block = load_block(property_id, block_id)
        nights = _nights_of(block)
        types = sorted({n.room_type_id for n in nights}, key=str)
        counts = night_counts(property_id, types, block.arrival_date, block.departure_date)
        data = []
        for n in nights:
            c = counts[(n.room_type_id, n.date)]
            cap = f"min({c.physical} - {c.ooo} - {c.oos}, " \
                  f"{'none' if c.sell_limit is None else c.sell_limit})"
            data.append(s.ReceiptNightOut(
                room_type_id=n.room_type_id, date=n.date, allotted=n.allotted, picked=n.picked,
                released=n.released, washed=n.washed, held=night_held(block, n),
                physical=c.physical, out_of_order=c.ooo, out_of_service=c.oos,
                sell_limit=c.sell_limit, sold=c.sold, held_by_blocks=c.held,
                sellable=c.sellable,
                arithmetic=f"max({cap} - {c.sold} sold - {c.held} held, 0) = {c.sellable}"))
        return s.PickupReceiptOut(block_id=block.id, status=block.status,
                                  deducts=bool(block.deducts),
                                  cut_off=block.cut_off_at is not None, formula=FORMULA,
                                  data=data)
