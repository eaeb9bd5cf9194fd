"""Stay moves at the front desk: room assignment and moves, the automatic room pick of a
check-in, revert, no-show and split. One unit of work per use case, one outbox row and one
audit row each.

Room holds (`RoomStay`: one physical room never serves two stays on overlapping nights) and the
checks before a room is given live in `pms.services.reservations.room_holds`, which booking edits use too.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import date
from types import SimpleNamespace
from typing import Any

from pms import wiring
from pms.context import Ctx
from pms.db.dialect import fast_path
from pms.db.locking import for_update, lock_errors, locking_enabled
from pms.db.statements import Statement
from pms.db.uow import unit_of_work
from pms.domain import states
from pms.domain.fees import policy_fee
from pms.domain.states import RESERVATION_MACHINE, ROOM_MACHINE, ReservationStatus
from pms.domain.stay import stay_nights
from pms.errors import Conflict, NotFound, RoomUnavailable
from pms.models import Reservation, Room, RoomStay
from pms.schemas import reservations as s
from pms.schemas.common import to_data
from pms.services.cashiering.folios import (
    close_settled_folios,
    guest_folio,
    open_folio,
    reopen_folio,
)
from pms.services.catalog.catalog import load_property
from pms.services.groups.room_block_inventory import release_stay_nights
from pms.services.keys import stay_hooks
from pms.services.reservations.reservations import (
    business_date,
    load_reservation,
    record,
)
from pms.services.reservations.room_holds import (
    OUT_OF_ORDER_MARKS,
    check_room,
    find_room,
    hold_room,
    out_of_order,
    release_room_holds,
)
from pms.services.reservations.stay_splits import _set_prices, _split_prices
from pms.services.reservations.stay_splits import split as split

# -- the stay and its business date, locked in one read (check-in, check-out) ------------------

def _stay_columns() -> str:
    return ", ".join(f"r.{f.column_name}" for f in Reservation._meta.sorted_fields)


_LOCK_STAY = """
SELECT {columns}, p.timezone, p.business_date
  FROM reservation r JOIN property p ON p.env_id = %(env)s AND p.id = r.property_id
 WHERE r.env_id = %(env)s AND r.id = %(id)s AND r.property_id = %(prop)s
   AND (%(holder)s::uuid IS NULL OR r.guest_profile_id = %(holder)s::uuid)"""


class _LazyStatement:
    """A Statement whose text needs the models (built on first use)."""

    def __init__(self, name: str, suffix: str, locks: Any = None) -> None:
        self.name, self.suffix, self.locks, self.statement = name, suffix, locks, None

    def one(self, **values: Any) -> Any:
        if self.statement is None:
            self.statement = Statement.text(self.name, postgres=_LOCK_STAY.format(
                columns=_stay_columns()) + self.suffix, locks=self.locks)
        return self.statement.one(**values)


LOCK_STAY = _LazyStatement("stays.lock_stay", " FOR UPDATE OF r", locks=Reservation)
READ_STAY = _LazyStatement("stays.read_stay", "")  # the TEST-ONLY control runs: no lock


def _lock_stay_pg(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID
                  ) -> tuple[Reservation, date]:
    """`lock_stay` in one statement (PostgreSQL; PERF, no query building, one
    round trip). The row locked is declared to the unit of work by the statement (`locks`:
    its event's version goes with the queued writes)."""
    statement = LOCK_STAY if locking_enabled() else READ_STAY
    found = statement.one(id=reservation_id, prop=property_id, holder=ctx.holder_id)
    if found is None:
        raise NotFound("no such reservation")
    width = Reservation.column_count()
    row = Reservation.from_columns(found[:width])
    timezone, day = found[width:]
    return row, business_date(SimpleNamespace(business_date=day, timezone=timezone), ctx.now)


@fast_path(_lock_stay_pg)
def lock_stay(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID
              ) -> tuple[Reservation, date]:
    """`load_reservation(lock=True)` and the property's business date, inside a unit of
    work.

    Raises:
        NotFound: no such reservation of the property (a guest session: of its own).
    """
    row = load_reservation(ctx, property_id, reservation_id, lock=True)
    return row, business_date(load_property(property_id), ctx.now)


# -- rooms (inside a unit of work) -------------------------------------------------------------

def mark_dirty(room: Room) -> None:
    room.hk_status = states.HK_MACHINE.transition(room.hk_status, "dirty").value


def auto_assign(row: Reservation, start: date) -> Room:
    """The first free room of the booked type: vacant, in order, clean ones first, returned
    locked (inside the caller's unit of work).

    Concurrent check-ins must not all pick the same "first free" room and then queue on its
    lock only to find it occupied (409 while other rooms are free). On PostgreSQL each picker
    locks its candidate with FOR UPDATE SKIP LOCKED, so a room another check-in is taking is
    skipped, not waited for; a room taken meanwhile fails the re-checked `status = VACANT`. On
    SQLite the write transaction holds the database lock, so pickers run one after another.

    Raises:
        RoomUnavailable (409): no room of the type is free for the stay.
    """
    busy = RoomStay.select(RoomStay.room).where(
        (RoomStay.start_date < row.departure_date) & (RoomStay.end_date > start)
        & (RoomStay.reservation != row.id))
    candidates = (Room.select().where(
        (Room.property == row.property_id) & (Room.room_type == row.room_type_id)
        & (Room.status == states.RoomStatus.VACANT.value) & Room.id.not_in(busy)
        & Room.hk_status.not_in(list(OUT_OF_ORDER_MARKS)))
        .order_by((Room.hk_status == "DIRTY").asc(), Room.room_number))
    wired = wiring.current()
    rejected: list[uuid.UUID] = []
    while True:
        query = candidates.where(Room.id.not_in(rejected)) if rejected else candidates
        room = for_update(query, skip_locked=True).first()
        if room is None:
            raise RoomUnavailable("no vacant room of the booked type is free for this stay")
        if not out_of_order(room.id, start, row.departure_date):
            if wired.pause_after_pick is not None:  # TEST-ONLY: hold the pick open
                wired.pause_after_pick()
            return room
        rejected.append(room.id)  # in maintenance on these nights: try the next one


def shorten_stay(row: Reservation, departure: date) -> None:
    """End a locked stay early at `departure` (inside the caller's unit of work): the nights
    from `departure` to the booked departure go back to inventory, and the nightly prices and
    totals keep only the nights stayed (packages and discounts in proportion, as a split)."""
    unused = stay_nights(departure, row.departure_date)
    if not unused:
        return
    # a picked-up stay's unused nights go back to its block or the house
    release_stay_nights(row.property_id, row.block_id, row.room_type_id, unused,
                        reservation=row)
    kept, _ = _split_prices(row, departure)
    _set_prices(row, kept)
    row.departure_date = departure


# -- room assignment and move -------------------------------------------------------------------

def assign_room(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID,
                body: s.RoomAssignIn) -> Reservation:
    """Assign a room to a CONFIRMED stay, or move an in-house guest to another room.

    Raises:
        NotFound. ValidationFailed: unknown room. InvalidTransition (409): terminal stay.
        RoomUnavailable (409): wrong type, out of order, occupied or held on these nights.
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_reservation(ctx, property_id, reservation_id, lock=True)
        in_house = row.status == ReservationStatus.CHECKED_IN
        status = RESERVATION_MACHINE.transition(row.status, "move_room" if in_house
                                                else "assign_room")
        before = to_data(s.reservation_out(row))
        room = find_room(property_id, room_number=body.room_number, room_id=body.room_id,
                         lock=True)
        if room.id == row.room_id:
            raise Conflict(f"the stay already has room {room.room_number}", code="no_change")
        today = business_date(load_property(property_id), ctx.now)
        start = max(today, row.arrival_date) if in_house else row.arrival_date
        check_room(row, room, start, row.departure_date)
        if in_house:
            old_room_id = row.room_id
            _move(row, room, start)
            stay_hooks.move_keys(uow, row, old_room_id, room)  # old room's keys revoked, new issued
        else:
            release_room_holds(row)
            hold_room(row, room.id, row.arrival_date, row.departure_date)
        row.status = status.value
        row.save()
        record(uow, row, "room_moved" if in_house else "room_assigned", before=before)
    return row


def _move(row: Reservation, room: Room, start: date) -> None:
    old = Room.select().where(Room.id == row.room_id).first()
    new_status = ROOM_MACHINE.transition(room.status, "occupy", error=RoomUnavailable)
    RoomStay.delete().where((RoomStay.reservation == row.id)
                            & (RoomStay.start_date >= start)).execute()
    RoomStay.update(end_date=start).where((RoomStay.reservation == row.id)
                                          & (RoomStay.end_date > start)).execute()
    hold_room(row, room.id, start, row.departure_date)
    room.status = new_status.value
    room.save()
    if old is not None:
        old.status = ROOM_MACHINE.transition(old.status, "vacate").value
        mark_dirty(old)
        old.save()
    open_folio(row, room_number=room.room_number)


# -- revert -------------------------------------------------------------------------------------

def revert(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID,
           body: s.RevertIn, *, check_out_hooks: Sequence[Callable[[Any, Reservation], None]] = ()
           ) -> Reservation:
    """Undo a check-in (back to CONFIRMED) or a check-out (back to CHECKED_IN) made on the
    current business date. The reason is stored on the audit row. `check_out_hooks` run
    inside the unit of work of a check-out's revert, before the stay is undone (the
    front desk's list: `pms.services.frontdesk.checkout.REVERT_CHECK_OUT_HOOKS`, the
    direct bill's reversal among them).

    Raises:
        NotFound. InvalidTransition (409): nothing to revert.
        Conflict (409 revert_window_closed): the move was on an earlier business date.
        RoomUnavailable (409): revert check-out when the room is taken again.
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_reservation(ctx, property_id, reservation_id, lock=True)
        trigger = ("revert_check_out" if row.status == ReservationStatus.CHECKED_OUT
                   else "revert_check_in")
        status = RESERVATION_MACHINE.transition(row.status, trigger)
        before = to_data(s.reservation_out(row))
        today = business_date(load_property(property_id), ctx.now)
        moved_on = (row.checked_out_business_date if trigger == "revert_check_out"
                    else row.checked_in_business_date)
        if moved_on != today:
            raise Conflict(f"only a move of the current business date {today} can be reverted",
                           code="revert_window_closed")
        room = Room.select().where(Room.id == row.room_id).first()
        if trigger == "revert_check_in":
            _undo_check_in(row, room)
            stay_hooks.revoke_stay_keys(uow, row, "check_in_reverted")  # no keys for a booked stay
        else:
            for hook in check_out_hooks:
                hook(uow, row)
            _undo_check_out(row, room, today)
        row.status = status.value
        row.save()
        record(uow, row, trigger.replace("revert_", "reverted_"), before=before,
               reason=body.reason)
    return row


def _undo_check_in(row: Reservation, room: Room | None) -> None:
    if room is not None:
        room = for_update(Room.select().where(Room.id == room.id)).first()
        room.status = ROOM_MACHINE.transition(room.status, "vacate").value
        room.save()
    row.checked_in_at = None
    row.checked_in_business_date = None


def _undo_check_out(row: Reservation, room: Room | None, today: date) -> None:
    if room is None:
        raise RoomUnavailable("the stay has no room to return to")
    room = for_update(Room.select().where(Room.id == room.id)).first()
    room.status = ROOM_MACHINE.transition(room.status, "occupy", error=RoomUnavailable).value
    room.save()
    start = max(today, row.arrival_date)
    check_room(row, room, start, row.departure_date)
    hold_room(row, room.id, start, row.departure_date)
    folio = guest_folio(row, lock=True)
    if folio is not None and folio.status == states.FolioStatus.CLOSED:
        reopen_folio(folio)
    else:
        open_folio(row, room_number=room.room_number)
    row.checked_out_at = None
    row.checked_out_business_date = None


# -- no-show ------------------------------------------------------------------------------------

def apply_no_show(row: Reservation, today: date) -> None:
    """Mark a locked CONFIRMED reservation NO_SHOW inside the caller's unit of work: release its
    nights and room hold, record the no-show fee. For the night audit and the route alike."""
    from pms.models import RatePlan

    status = RESERVATION_MACHINE.transition(row.status, "no_show")
    if row.arrival_date > today:
        raise Conflict(f"the guest is not due before {row.arrival_date}", code="not_yet_arrival")
    release_stay_nights(row.property_id, row.block_id, row.room_type_id,
                        stay_nights(row.arrival_date, row.departure_date), reservation=row)
    release_room_holds(row)
    plan = RatePlan.get_by_id(row.rate_plan_id)
    row.no_show_fee = policy_fee(plan.no_show_policy, row.nightly_prices, row.total_amount,
                                 row.currency)
    row.status = status.value
    row.save()


def no_show(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID) -> Reservation:
    """Mark a CONFIRMED reservation due today or earlier NO_SHOW.

    Raises:
        NotFound. InvalidTransition (409): not CONFIRMED. Conflict (409 not_yet_arrival).
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_reservation(ctx, property_id, reservation_id, lock=True)
        before = to_data(s.reservation_out(row))
        apply_no_show(row, business_date(load_property(property_id), ctx.now))
        close_settled_folios(row, now=ctx.now)
        record(uow, row, "no_show", before=before)
    return row
