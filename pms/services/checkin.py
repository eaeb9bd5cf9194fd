"""Check-in and walk-in. Check-in gives the stay a room (the one given, the one assigned, or the
first free one of the booked type), makes the room OCCUPIED and opens the stay's folio in the same
transaction: an occupied room always has an OPEN folio (SPEC rule 5).
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.domain.business_date import business_date
from pms.domain.states import RESERVATION_MACHINE, ROOM_MACHINE
from pms.errors import Conflict, RoomTypeUnavailable, ValidationFailed
from pms.models import RatePlan, Reservation, Room, RoomType
from pms.schemas import reservations as s
from pms.schemas.common import to_data
from pms.services.catalog import load_property
from pms.services.folios import open_folio
from pms.services.reservation_lookup import load_reservation
from pms.services.reservations import create_reservation, record
from pms.services.room_holds import check_room, find_room, hold_room, release_room_holds
from pms.services.stays import auto_assign


def check_in(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID,
             body: s.CheckInIn) -> Reservation:
    """Check a CONFIRMED guest in on (or after) the arrival date.

    Raises:
        NotFound. InvalidTransition (409): not CONFIRMED.
        Conflict (409 check_in_too_early / stay_ended): outside the stay's dates.
        ValidationFailed (422): unknown room.
        RoomUnavailable (409): the room is of another type, occupied, out of order or held by
            another stay; or no free room of the type is left.
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_reservation(ctx, property_id, reservation_id, lock=True)
        status = RESERVATION_MACHINE.transition(row.status, "check_in")
        before = to_data(s.reservation_out(row))
        today = business_date(load_property(property_id), ctx.now)
        if row.arrival_date > today:
            raise Conflict(f"check-in opens on the arrival date {row.arrival_date}",
                           code="check_in_too_early")
        if row.departure_date <= today:
            raise Conflict("the stay's departure date has passed", code="stay_ended")
        if body.room_number or body.room_id:
            room = find_room(property_id, room_number=body.room_number, room_id=body.room_id)
        elif row.room_id is not None:
            room = Room.get_by_id(row.room_id)
        else:
            room = auto_assign(row, today)
        room = for_update(Room.select().where(Room.id == room.id)).first()
        check_room(row, room, today, row.departure_date)
        room.status = ROOM_MACHINE.transition(room.status, "occupy", error=_room_busy).value
        room.save()
        release_room_holds(row)
        hold_room(row, room.id, today, row.departure_date)
        open_folio(row, room_number=room.room_number)
        row.status = status.value
        row.checked_in_at = ctx.now
        row.checked_in_business_date = today
        row.save()
        record(uow, row, "checked_in", before=before)
    return row


class _room_busy(Conflict):  # noqa: N801 - used as a Machine error class
    """Raised when the chosen room is already occupied."""

    code = "room_unavailable"


# -- walk-in ------------------------------------------------------------------------------------

def walk_in(ctx: Ctx, property_id: uuid.UUID, body: s.WalkInIn) -> Reservation:
    """Express booking at the kiosk or desk: a CONFIRMED reservation arriving today, source
    WALKIN, channel KIOSK, from the given (or the first available) room type; the guest then
    checks in through the normal check-in route.

    Raises:
        NotFound. ValidationFailed (422): no departure, bad references or occupancy.
        RoomTypeUnavailable (409): nothing is available tonight.
    """
    with read_scope(ctx):
        prop = load_property(property_id)
        today = business_date(prop, ctx.now)
        candidates = _candidates(property_id, body)
    if body.departure_date is not None:
        departure = body.departure_date
    else:
        departure = today + timedelta(days=body.nights or 1)
    last_error: Exception | None = None
    for room_type_id, rate_plan_id in candidates:
        reservation_in = s.ReservationIn(
            room_type_id=room_type_id, rate_plan_id=rate_plan_id, arrival_date=today,
            departure_date=departure, adults=body.adults, children=body.children,
            guest_profile_id=body.guest_profile_id, guest=body.guest)
        try:
            row, _ = create_reservation(ctx, property_id, reservation_in, source="WALKIN",
                                        channel="KIOSK")
            return row
        except (RoomTypeUnavailable, ValidationFailed) as exc:
            if body.room_type_id is not None and body.rate_plan_id is not None:
                raise
            last_error = exc
    if isinstance(last_error, ValidationFailed) and body.room_type_id is not None:
        raise last_error
    raise RoomTypeUnavailable("no room type is available for a walk-in tonight")


def _candidates(property_id: uuid.UUID, body: s.WalkInIn) -> list[tuple[uuid.UUID, uuid.UUID]]:
    types = RoomType.select().where(RoomType.property == property_id)
    if body.room_type_id is not None:
        types = types.where(RoomType.id == body.room_type_id)
    plans = RatePlan.select().where((RatePlan.property == property_id)
                                    & (RatePlan.active == True))  # noqa: E712
    if body.rate_plan_id is not None:
        plans = RatePlan.select().where((RatePlan.property == property_id)
                                        & (RatePlan.id == body.rate_plan_id))
    else:
        plans = plans.where(RatePlan.negotiated == False)  # noqa: E712
    type_ids = [t.id for t in types.order_by(RoomType.sort_order, RoomType.code)]
    plan_ids = [p.id for p in plans.order_by(RatePlan.code)]
    if body.room_type_id is not None and not type_ids:
        raise ValidationFailed("room_type_id is not a room type of this property",
                               errors=[{"field": "room_type_id", "message": "unknown"}])
    if body.rate_plan_id is not None and not plan_ids:
        raise ValidationFailed("rate_plan_id is not a rate plan of this property",
                               errors=[{"field": "rate_plan_id", "message": "unknown"}])
    return [(t, p) for t in type_ids for p in plan_ids]
