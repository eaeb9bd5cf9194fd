"""Reservation use cases: create (folded by confirmation number), edit, cancel, pre-check-in and
walk-in. Each is one unit of work writing the reservation, the inventory change, one outbox row
and one audit row. Front-desk moves live in `checkin`, `checkout` and `stays`.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import date
from decimal import Decimal
from typing import Any

import msgspec
import peewee

from pms.context import Ctx
from pms.db.database import db
from pms.db.locking import lock_errors
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.business_date import business_date
from pms.domain.fees import cancellation_fee
from pms.domain.states import RESERVATION_INITIAL, RESERVATION_MACHINE, ReservationStatus
from pms.domain.stay import stay_nights
from pms.errors import (
    AlreadyExists,
    Conflict,
    ReservationNotEditable,
    RoomTypeUnavailable,
)
from pms.models import RatePlan, Reservation, Room, RoomStay
from pms.queries.lookups import load_reservation
from pms.schemas import reservations as s
from pms.schemas.common import to_data
from pms.services.cashiering.folios import close_settled_folios
from pms.services.catalog.catalog import load_property
from pms.services.corporate import company_billing
from pms.services.groups import room_block_inventory
from pms.services.inventory import allotments
from pms.services.inventory.inventory import lock_inventory, release_rooms, take_rooms
from pms.services.keys import stay_hooks
from pms.services.reservations.booking_limits import check_guest_limit
from pms.services.reservations.booking_refs import (
    Refs,
    _apply_quote,
    _check_stay,
    _field_error,
    _guest,
    _load_refs,
    _quote,
)

# (pms/db/sql/pms_booking_refs.sql names its caller by this path; its text is hash-locked)
from pms.services.reservations.booking_refs import _read_refs as _read_refs
from pms.services.reservations.room_holds import check_room, hold_room, release_room_holds

CONFIRMATION_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


class _Duplicate(Exception):
    """Internal: the confirmation number exists; abort the UoW and return the existing row."""


# each random byte read as one of the 32 symbols (256 = 8 x 32: uniform, as secrets.choice)
_CONFIRMATION_TABLE = bytes(ord(CONFIRMATION_ALPHABET[b % 32]) for b in range(256))
assert len(CONFIRMATION_ALPHABET) == 32 == len(set(CONFIRMATION_ALPHABET))


def new_confirmation_number() -> str:
    """10 symbols, each uniform over the alphabet, from the OS's CSPRNG (PERF: one read of 10
    bytes and a table lookup; was a secrets.choice call per symbol)."""
    return secrets.token_bytes(10).translate(_CONFIRMATION_TABLE).decode("ascii")


def with_room(row: Reservation | None) -> Reservation | None:
    """Load the room while the scope is open, so serializing later needs no query."""
    if row is not None and row.room_id is not None:
        row.room  # noqa: B018 - peewee caches the related row on first access
    return row


def get_reservation(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID) -> Reservation:
    with read_scope(ctx):
        return with_room(load_reservation(ctx, property_id, reservation_id))


def record(uow: UnitOfWork, row: Reservation, action: str, *, before: dict[str, Any] | None = None,
           reason: str | None = None, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """The one audit row and the one outbox row of a reservation change."""
    data = data if data is not None else to_data(s.reservation_out(row))
    return uow.record("reservation", action, row, data, before=before, reason=reason,
                      property_id=row.property_id)


# -- references and pricing --------------------------------------------------------------------


# -- create ------------------------------------------------------------------------------------

def create_reservation(ctx: Ctx, property_id: uuid.UUID, body: s.ReservationIn, *,
                       source: str | None = None, channel: str | None = None,
                       pickup: Any = None) -> tuple[Reservation, bool]:
    """Book a stay: price it, sell the nights, write the reservation (CONFIRMED).

    A submission whose confirmation_number already exists returns that reservation instead
    (created = False; inventory is taken once). Choosing the number is for staff and channels
    (a channel's booking reference): a holder session may not send one, whatever its value, so
    the answer never tells a guest whether another guest's number exists (it retries with an
    Idempotency-Key instead).

    Raises:
        NotFound: no such property. ValidationFailed (422): bad dates, past arrival, occupancy,
            room type / rate plan not of this property (a negotiated plan not open to a holder
            session reads the same), stay not bookable under the plan, confirmation_number
            from a holder session (field_not_allowed).
        RoomTypeUnavailable (409): a night is sold out. LockTimeout (503): busy.
    """
    if body.confirmation_number and ctx.holder_id is not None:
        raise _field_error("confirmation_number", "a guest session may not choose the "
                           "confirmation number", code="field_not_allowed")
    if body.confirmation_number:
        existing = _by_confirmation(ctx, property_id, body.confirmation_number)
        if existing is not None:
            return existing, False
    try:
        with lock_errors(), unit_of_work(ctx) as uow:
            refs = _load_refs(property_id, body.room_type_id, body.rate_plan_id,
                              stay=(body.arrival_date, body.departure_date),
                              fence=(ctx, body.company_profile_id))
            today = business_date(refs.prop, ctx.now)
            nights = _check_stay(refs, body.arrival_date, body.departure_date, body.adults,
                                 body.children, today)
            check_guest_limit(ctx, refs.prop, today)
            if body.company_profile_id is not None:
                company_billing.require_company(ctx, body.company_profile_id)
            profile_id, first, last = _guest(ctx, body.guest_profile_id, body.guest,
                                             body.company_profile_id)
            quote = _quote(ctx, refs, body.arrival_date, body.departure_date, body.adults,
                           body.children, body.promo_code,
                           block_id=pickup.block_id if pickup is not None else None)
            row = Reservation.build(
                env_id=ctx.env_id, property=refs.prop.id, room_type=refs.room_type.id,
                rate_plan=refs.rate_plan.id, guest_profile=profile_id,
                confirmation_number=body.confirmation_number or new_confirmation_number(),
                status=RESERVATION_INITIAL.value, arrival_date=body.arrival_date,
                departure_date=body.departure_date, adults=body.adults, children=body.children,
                source=source or body.source, channel=channel or body.channel,
                guest_first_name=first, guest_last_name=last,
                guest_last_name_normalized=last.strip().lower(), promo_code=body.promo_code,
                notes=body.notes, version=1)
            if pickup is not None:  # picked up from a room block
                row.block_id = pickup.block_id
            _apply_quote(row, quote)
            billing = None
            if body.company_payment_method_id is not None:  # billed to a company
                billing = company_billing.check_billing(
                    ctx, body.company_profile_id, body.company_payment_method_id,
                    refs.prop.id, Decimal(row.total_amount), row.currency)
                row.company_billed = True  # check-out reads the routing only then
            row.company_profile_id = company_billing.booking_company(
                ctx, body.company_profile_id, billing)
            folding = body.confirmation_number is not None
            # PERF: a generated number's INSERT goes out with the take (one round trip)
            insert = None if folding or pickup is not None else row.insert_statement()
            if insert is None:
                _insert(row, folding=folding)
            _sell(refs, row, nights, pickup, insert)
            if billing is None:
                record(uow, row, "created")
            else:
                company_billing.record_billing(billing["company_profile_id"],
                                               billing["company_payment_method_id"], row)
                record(uow, row, "created", data={**to_data(s.reservation_out(row)),
                                                  "company_billing": billing})
        return row, True
    except RoomTypeUnavailable:
        # A concurrent twin may have sold the last room under this confirmation number.
        existing = (_by_confirmation(ctx, property_id, body.confirmation_number)
                    if body.confirmation_number else None)
        if existing is None:
            raise
        return existing, False
    except _Duplicate:
        existing = _by_confirmation(ctx, property_id, body.confirmation_number or "")
        if existing is None:  # pragma: no cover - the winner rolled back in between
            raise Conflict("a concurrent submission with this confirmation number failed; retry",
                           code="confirmation_number_conflict") from None
        return existing, False


def _sell(refs: Refs, row: Reservation, nights: list[date], pickup: Any,
          insert: tuple[str, list[Any]] | None) -> None:
    """Sell the booking's nights under their locks (from the house, or a block's held room),
    then check the rate plan's allotment under those same locks; a pick-up is
    a room the block holds, so no allotment of the plan refuses it."""
    early = allotments.TEST_HOOKS.check_before_lock  # TEST-ONLY control order
    version = getattr(refs.rate_plan, "version", None)
    if allotments.TEST_HOOKS.pause_before_lock is not None:  # TEST-ONLY: plan read, not locked
        allotments.TEST_HOOKS.pause_before_lock()
    if early and pickup is None:
        allotments.check(refs.prop.id, refs.room_type.id, refs.rate_plan.id, nights, row.id,
                         plan_version=version)
    if pickup is not None:  # the block's held room becomes a sold one (inserted before)
        pickup.take(refs.room_type.id, nights)
        allotments.counted(refs.prop.id, refs.room_type.id, refs.rate_plan.id, nights, row.id,
                           plan_version=version)
    else:
        try:
            take_rooms(refs.prop.id, refs.room_type.id, nights, first=insert,
                       rate_plan_id=refs.rate_plan.id)
        except peewee.IntegrityError as exc:  # only the reservation INSERT sent with it
            raise Conflict("a generated confirmation number collided; retry",
                           code="confirmation_number_conflict") from exc
    if not early and pickup is None:
        allotments.check(refs.prop.id, refs.room_type.id, refs.rate_plan.id, nights, row.id,
                         plan_version=version)


def _insert(row: Reservation, *, folding: bool) -> None:
    """Insert the reservation; the (env, confirmation_number) unique index folds duplicates.

    PERF: a generated number (10 of 32 symbols) does not collide in practice, so only a given
    number pays for the savepoint; a collision of a generated one still aborts cleanly (409).
    """
    if not folding:
        try:
            row.save(force_insert=True)
        except peewee.IntegrityError as exc:
            raise Conflict("a generated confirmation number collided; retry",
                           code="confirmation_number_conflict") from exc
        return
    try:
        with db.atomic():
            row.save(force_insert=True)
    except peewee.IntegrityError as exc:
        raise _Duplicate() from exc


def _by_confirmation(ctx: Ctx, property_id: uuid.UUID, number: str) -> Reservation | None:
    with read_scope(ctx):
        row = with_room(Reservation.select().where(
            Reservation.confirmation_number == number).first())
    if row is not None and row.property_id != property_id:
        raise AlreadyExists("this confirmation number belongs to a reservation of another "
                            "property", code="confirmation_number_taken")
    return row


# -- edit --------------------------------------------------------------------------------------

def _set(body: msgspec.Struct, name: str, current: Any) -> Any:
    value = getattr(body, name)
    return current if value is msgspec.UNSET else value


def edit_reservation(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID,
                     body: s.ReservationPatch, *, pickup: Any = None) -> Reservation:
    """Change dates, occupancy, room type or rate plan: re-checked and re-priced atomically
    (the old nights are released and the new ones taken in the same transaction).

    A reservation picked up from a block keeps its room type and moves its dates only through
    its block (`pickup`, the block's bulk date change): the old nights go back to the
    block (or the house after the cut-off), the new ones are picked up again (the allocation
    and the house re-checked), the block's row lock first, then every night's lock at once.

    Raises:
        NotFound. ReservationNotEditable (409): CANCELLED, CHECKED_OUT or NO_SHOW.
        Conflict (409 reservation_in_house): arrival or room type of a checked-in stay.
        ValidationFailed (422), RoomTypeUnavailable (409), LockTimeout (503).
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_reservation(ctx, property_id, reservation_id, lock=True)
        RESERVATION_MACHINE.transition(row.status, "edit", error=ReservationNotEditable)
        before = to_data(s.reservation_out(row))
        arrival = _set(body, "arrival_date", row.arrival_date)
        departure = _set(body, "departure_date", row.departure_date)
        room_type_id = _set(body, "room_type_id", row.room_type_id)
        rate_plan_id = _set(body, "rate_plan_id", row.rate_plan_id)
        adults, children = _set(body, "adults", row.adults), _set(body, "children", row.children)
        promo = _set(body, "promo_code", row.promo_code)
        in_house = row.status == ReservationStatus.CHECKED_IN
        if in_house and (arrival != row.arrival_date or room_type_id != row.room_type_id):
            raise Conflict("the guest is in house: arrival and room type cannot change "
                           "(use a room move)", code="reservation_in_house")
        # a changed plan must be open to the caller; the booked one stays (staff may have
        # booked the guest on a negotiated plan)
        refs = _load_refs(property_id, room_type_id, rate_plan_id,
                          offered_to=ctx if rate_plan_id != row.rate_plan_id else None)
        if body.company_profile_id is not msgspec.UNSET:
            company_billing.change_booking_company(ctx, row, body.company_profile_id,
                                                   refs.rate_plan)
        today = business_date(refs.prop, ctx.now)
        new_nights = _check_stay(refs, arrival, departure, adults, children, today,
                                 check_arrival=arrival != row.arrival_date)
        if in_house and departure < today:  # leaving today is a morning's departure
            raise _field_error("departure_date", "an in-house stay cannot depart before the "
                               f"current business date {today}")
        old_nights = stay_nights(row.arrival_date, row.departure_date)
        quote = _quote(ctx, refs, arrival, departure, adults, children, promo,
                       block_id=row.block_id)
        # a stay billed to a company may not grow past its credit limit (checked
        # before the inventory locks: the company's lock comes first, as on create)
        company_billing.check_growth(ctx, row.id, Decimal(quote.total) - Decimal(row.total_amount),
                                     quote.currency)
        if row.block_id is not None and rate_plan_id != row.rate_plan_id:
            # the block's pick-up and revenue count its reservations at the block's plan
            raise Conflict("a reservation picked up from a block stays at the block's rate "
                           "plan", code="block_reservation")
        if (room_type_id, new_nights) != (row.room_type_id, old_nights):
            if row.block_id is not None and (pickup is None or room_type_id != row.room_type_id):
                # the block's grid counts these nights
                raise Conflict("a reservation picked up from a block keeps its room type and "
                               "moves its dates through the block's bulk date change",
                               code="block_reservation")
            if row.block_id is not None:
                room_block_inventory.lock_for_cancel(property_id, row.block_id)
            lock_inventory(refs.prop.id, [(row.room_type_id, old_nights),
                                          (room_type_id, new_nights)])
            if row.block_id is not None:
                room_block_inventory.release_stay_nights(property_id, row.block_id,
                                                         row.room_type_id, old_nights,
                                                         reservation=row)
                pickup.take(room_type_id, new_nights)
            else:
                release_rooms(refs.prop.id, row.room_type_id, old_nights, reservation=row)
                take_rooms(refs.prop.id, room_type_id, new_nights, rate_plan_id=rate_plan_id)
        elif rate_plan_id != row.rate_plan_id:  # the same nights on another plan
            lock_inventory(refs.prop.id, [(room_type_id, new_nights)])
            allotments.released(refs.prop.id, row.room_type_id, row, old_nights)
        if row.block_id is None and (room_type_id, new_nights, rate_plan_id) != (
                row.room_type_id, old_nights, row.rate_plan_id):
            # the new plan's allotment, under the nights' locks (taken above)
            allotments.check(refs.prop.id, room_type_id, rate_plan_id, new_nights, row.id,
                             plan_version=getattr(refs.rate_plan, "version", None))
        if row.room_id is not None and (arrival, departure, room_type_id) != (
                row.arrival_date, row.departure_date, row.room_type_id):
            _rehome_room(row, arrival, departure, room_type_id, in_house)
        departure_time = _set(body, "departure_time", row.departure_time)
        departure_moved = in_house and (departure, departure_time) != (row.departure_date,
                                                                       row.departure_time)
        row.arrival_date, row.departure_date = arrival, departure
        row.departure_time = departure_time
        if departure_moved:  # the stay's live keys end at the new departure (and its time)
            stay_hooks.move_validity(uow, row)
        row.room_type, row.rate_plan = room_type_id, rate_plan_id
        row.adults, row.children, row.promo_code = adults, children, promo
        if body.guest is not msgspec.UNSET:
            row.guest_first_name, row.guest_last_name = body.guest.first_name, body.guest.last_name
            row.guest_last_name_normalized = body.guest.last_name.strip().lower()
        row.notes = _set(body, "notes", row.notes)
        _apply_quote(row, quote)
        row.status = RESERVATION_MACHINE.transition(row.status, "edit").value
        uow.save(row)
        record(uow, row, "updated", before=before)
    return row


def _rehome_room(row: Reservation, arrival: date, departure: date, room_type_id: uuid.UUID,
                 in_house: bool) -> None:
    """Keep the room hold in step with new dates. An in-house stay keeps its room (an extension
    must find it free); a pre-assigned room that no longer fits is unassigned, not an error."""
    from pms.errors import RoomUnavailable

    room = Room.get_by_id(row.room_id)
    if in_house:
        if departure > row.departure_date:
            check_room(row, room, row.departure_date, departure)
        RoomStay.update(end_date=departure).where(
            (RoomStay.reservation == row.id) & (RoomStay.room == room.id)
            & (RoomStay.end_date == row.departure_date)).execute()
        return
    release_room_holds(row)
    row.room = None
    if room_type_id != row.room_type_id:
        return
    try:
        check_room(row, room, arrival, departure)
    except RoomUnavailable:
        return
    hold_room(row, room.id, arrival, departure)


# -- cancel ------------------------------------------------------------------------------------

def cancel_reservation(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID) -> Reservation:
    """Cancel a CONFIRMED reservation: release its nights and room, record the fee.

    Raises:
        NotFound. InvalidTransition (409): not CONFIRMED. LockTimeout (503).
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_reservation(ctx, property_id, reservation_id, lock=True)
        cancel_locked(ctx, uow, property_id, row)
    return row


def cancel_locked(ctx: Ctx, uow: Any, property_id: uuid.UUID, row: Reservation) -> None:
    """The cancel itself, inside `uow`, the reservation row locked by the caller (a guest's
    cancel, or a block cancelled with its pick-ups, which locks its reservations first, in id
    order, then runs this for each): nights back to the block or the house (the block row's
    lock, then the night locks), the room hold released, the fee recorded, the event."""
    status = RESERVATION_MACHINE.transition(row.status, "cancel")
    before = to_data(s.reservation_out(row))
    prop = load_property(property_id)
    rate_plan = RatePlan.get_by_id(row.rate_plan_id)
    # a picked-up room goes back to its block before the cut-off, else the house
    room_block_inventory.release_stay_nights(
        property_id, row.block_id, row.room_type_id,
        stay_nights(row.arrival_date, row.departure_date), reservation=row)
    release_room_holds(row)
    row.cancellation_fee = cancellation_fee(rate_plan.cancellation_policy, row.nightly_prices,
                                            row.total_amount, row.currency,
                                            arrival=row.arrival_date,
                                            timezone=prop.timezone, now=ctx.now)
    close_settled_folios(row, now=ctx.now)  # (before the row's UPDATE: it rides the COMMIT)
    row.cancelled_at = ctx.now
    row.status = status.value
    uow.save(row)
    record(uow, row, "cancelled", before=before)
