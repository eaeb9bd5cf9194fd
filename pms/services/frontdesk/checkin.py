"""Check-in and walk-in. Check-in gives the stay a room (the one given, the one assigned, or the
first free one of the booked type), makes the room OCCUPIED and opens the stay's folio in the same
transaction: an occupied room always has an OPEN folio (SPEC rule 5).
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from pms.context import Ctx
from pms.db.locking import lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.domain.business_date import business_date
from pms.domain.states import RESERVATION_MACHINE, ROOM_MACHINE
from pms.errors import (
    Conflict,
    Forbidden,
    RoomTypeUnavailable,
    RoomUnavailable,
    ValidationFailed,
)
from pms.models import Profile, RatePlan, Reservation, Room, RoomType
from pms.schemas import reservations as s
from pms.schemas.common import to_data
from pms.services.catalog.catalog import load_property
from pms.services.frontdesk import stay_reads
from pms.services.frontdesk.desk_writes import assign_room, occupy_room
from pms.services.kiosk import kiosk_sessions
from pms.services.references import unknown_reference
from pms.services.reservations.reservations import create_reservation, record
from pms.services.reservations.room_holds import (
    check_room,
    find_room,
    lock_room,
)
from pms.services.reservations.stays import lock_stay

# Room readiness, the one rule (the kiosk lookup's `room_not_ready` and check-in): a room is
# ready for a guest when it is VACANT and CLEAN or INSPECTED.
READY_HK = ("CLEAN", "INSPECTED")


def room_ready(status: str | None, hk_status: str | None) -> bool:
    return status == "VACANT" and hk_status in READY_HK


def unattended(ctx: Ctx) -> bool:
    """A kiosk or a guest's own token: nobody at the desk sees the room's state, so only a
    ready room is given (no `dirty_room_reason`)."""
    return kiosk_sessions.is_kiosk(ctx) or ctx.holder_id is not None


def check_in(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID,
             body: s.CheckInIn) -> Reservation:
    """Check a CONFIRMED guest in on (or after) the arrival date.

    Raises:
        NotFound. InvalidTransition (409): not CONFIRMED.
        KioskLocked, KioskModeDisabled (409), KioskSessionInvalid (403): a kiosk token
            without CHECK_IN or without its session for this stay (pms.services.kiosk.kiosk_sessions).
        Conflict (409 check_in_too_early / stay_ended): outside the stay's dates.
        ValidationFailed (422): unknown room.
        RoomUnavailable (409): the room is of another type, occupied, out of order or held by
            another stay; or no free room of the type is left. 409 room_not_ready: the room
            (given, assigned or the only one left) is not CLEAN or INSPECTED and the desk gave
            no `dirty_room_reason`.
        Forbidden (403 override_not_allowed): a kiosk or guest token sent dirty_room_reason.

    Readiness: every check-in needs a ready room (`room_ready`: VACANT and CLEAN or INSPECTED);
    the auto-pick takes clean rooms first, and a dirty one only with a reason. Staff may check
    a guest into a room that is not ready knowingly, by giving `dirty_room_reason`: it is kept
    on the `reservation.checked_in` audit row (and its event's data as `dirty_room_reason`).
    """
    if body.dirty_room_reason is not None and unattended(ctx):
        raise Forbidden("only the desk may check a guest into a room that is not ready",
                        code="override_not_allowed")
    with lock_errors(), unit_of_work(ctx) as uow:
        kiosk_sessions.admit(ctx, property_id, reservation_id, kiosk_sessions.CHECK_IN)
        if body.room_number or body.room_id:
            row, today = lock_stay(ctx, property_id, reservation_id)
            pick, tried = None, False
        else:  # the room picked in the stay's read where the rule picks it (PostgreSQL)
            row, today, pick, tried = stay_reads.check_in_read(ctx, property_id, reservation_id)
        status = RESERVATION_MACHINE.transition(row.status, "check_in")
        before = to_data(s.reservation_out(row))
        if row.arrival_date > today:
            raise Conflict(f"check-in opens on the arrival date {row.arrival_date}",
                           code="check_in_too_early")
        if row.departure_date <= today:
            raise Conflict("the stay's departure date has passed", code="stay_ended")
        picked = False
        if body.room_number or body.room_id:
            room = find_room(property_id, room_number=body.room_number, room_id=body.room_id)
        elif row.room_id is not None:
            room = Room.get_by_id(row.room_id)
        elif tried:
            if pick is None:
                raise RoomUnavailable("no vacant room of the booked type is free for this stay")
            room, picked = pick, True  # locked and checked by pms_pick_room
        else:
            room, picked = assign_room(row, today)
        if not picked:
            room = lock_room(room.id)
            check_room(row, room, today, row.departure_date)
        dirty = room.hk_status not in READY_HK
        if dirty and body.dirty_room_reason is None:
            raise RoomUnavailable(
                f"room {room.room_number} is not ready (housekeeping {room.hk_status})"
                + ("" if unattended(ctx) else "; give dirty_room_reason to check in anyway"),
                code="room_not_ready", room_number=room.room_number)
        room.status = ROOM_MACHINE.transition(room.status, "occupy", error=_room_busy).value
        occupy_room(uow, row, room, today)
        row.room = room.id
        row.status = status.value
        row.checked_in_at = ctx.now
        row.checked_in_business_date = today
        uow.save(row)
        row.room = room  # (the answer reads its number without a query)
        data = None
        if dirty:
            data = {**to_data(s.reservation_out(row)), "dirty_room_reason": body.dirty_room_reason}
        record(uow, row, "checked_in", before=before,
               reason=body.dirty_room_reason if dirty else None, data=data)
    return row


class _room_busy(Conflict):  # noqa: N801 - used as a Machine error class
    """Raised when the chosen room is already occupied."""

    code = "room_unavailable"


# -- walk-in ------------------------------------------------------------------------------------

def walk_in(ctx: Ctx, property_id: uuid.UUID, body: s.WalkInIn) -> Reservation:
    """Express booking at the kiosk or desk: a CONFIRMED reservation arriving today, source
    WALKIN, channel KIOSK, from the given (or the first available) room type; the guest then
    checks in through the normal check-in route.

    A kiosk token needs the WALK_IN mode (409 kiosk_mode_disabled; 409
    kiosk_locked in lockdown), a guarantee (payment_method_id, else 422) and books the public
    plans only (a named negotiated plan reads as unknown, 422).

    Raises:
        NotFound. ValidationFailed (422): no departure, bad references or occupancy.
        RoomTypeUnavailable (409): nothing is available tonight.
    """
    kiosk = kiosk_sessions.is_kiosk(ctx)
    if kiosk and body.payment_method_id is None:
        raise ValidationFailed("a walk-in at a kiosk needs a guarantee (payment_method_id)",
                               errors=[{"field": "payment_method_id", "message": "required"}])
    with read_scope(ctx):
        prop = load_property(property_id)
        if kiosk:  # on the server, per route
            kiosk_sessions.require_terminal_property(ctx, property_id)
            kiosk_sessions.require_modes(property_id, kiosk_sessions.WALK_IN)
        today = business_date(prop, ctx.now)
        if (body.guest_profile_id is not None and ctx.holder_id is None
                and not Profile.select(Profile.id).where(
                    Profile.id == body.guest_profile_id).exists()):
            # before any room type is tried: a full house must not hide an unknown profile
            raise unknown_reference("guest_profile_id", "guest_profile_id is not a known profile")
        candidates = _candidates(property_id, body, public_only=kiosk)
    if body.departure_date is not None:
        departure = body.departure_date
    else:
        departure = today + timedelta(days=body.nights or 1)
    # a candidate may be refused for its own reasons (a room type too small for the party, a
    # plan's restriction: 422) or be sold out (409); only when every candidate was refused as
    # invalid is the answer the 422 that says why, otherwise it is room_type_unavailable
    invalid: ValidationFailed | None = None
    unavailable = False
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
            if isinstance(exc, ValidationFailed):
                invalid = exc
            else:
                unavailable = True
    if invalid is not None and (not unavailable or body.room_type_id is not None):
        raise invalid
    raise RoomTypeUnavailable("no room type is available for a walk-in tonight")


def _candidates(property_id: uuid.UUID, body: s.WalkInIn, *, public_only: bool = False
                ) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """(room type, rate plan) pairs to try. `public_only` (a kiosk): the plans of the public
    search only, never a negotiated one, even when named (422 as an unknown plan)."""
    types = RoomType.select().where(RoomType.property == property_id)
    if body.room_type_id is not None:
        types = types.where(RoomType.id == body.room_type_id)
    plans = RatePlan.select().where((RatePlan.property == property_id)
                                    & (RatePlan.active == True))  # noqa: E712
    if body.rate_plan_id is not None:
        plans = RatePlan.select().where((RatePlan.property == property_id)
                                        & (RatePlan.id == body.rate_plan_id))
        if public_only:
            plans = plans.where((RatePlan.negotiated == False)  # noqa: E712
                                & (RatePlan.active == True))  # noqa: E712
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
