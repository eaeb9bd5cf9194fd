"""Reservation shapes: create, edit, walk-in, front-desk commands, and what the API returns.

Stay dates are `YYYY-MM-DD` in the property's calendar; money is a decimal string with a
currency code. Request bodies refuse unknown fields (env_id, status, id...).
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pms.domain.states import MessageStatus, ReservationStatus, ServiceRequestStatus
from pms.schemas.cashiering import PaymentMethodId
from pms.schemas.common import ListQuery, NightPriceOut, Out, RoomNumber, Strict, Text

PersonName = Annotated[str, msgspec.Meta(min_length=1, max_length=120)]
ConfirmationNumber = Annotated[str, msgspec.Meta(
    min_length=3, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:/-]*$",
    description="Unique per env; generated when not given (e.g. a channel's booking reference)")]
Adults = Annotated[int, msgspec.Meta(ge=1, le=20)]
Children = Annotated[int, msgspec.Meta(ge=0, le=20)]
PromoCode = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
Source = Literal["DIRECT", "CHANNEL", "PHONE", "GDS", "CORPORATE", "WALKIN"]
Channel = Literal["WEB", "KIOSK", "GDS", "OTA", "PHONE", "APP", "FRONT_DESK", "EMAIL"]
Reason = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
ShortText = Annotated[str, msgspec.Meta(max_length=200)]


class GuestIn(Strict):
    last_name: PersonName
    first_name: PersonName | None = None


class ReservationIn(Strict):
    room_type_id: uuid.UUID
    rate_plan_id: uuid.UUID
    arrival_date: date
    departure_date: date
    adults: Adults = 1
    children: Children = 0
    guest_profile_id: uuid.UUID | None = None
    guest: GuestIn | None = None
    confirmation_number: ConfirmationNumber | None = None
    source: Source = "DIRECT"
    channel: Channel = "WEB"
    promo_code: PromoCode | None = None
    notes: Text | None = None
    # the company a booking on a negotiated plan is for (the rate fence)
    company_profile_id: uuid.UUID | None = None
    # billed to that company through one of its approved payment methods
    company_payment_method_id: uuid.UUID | None = None


# a local time of day at the property, "HH:MM" (24 h)
LocalTime = Annotated[str, msgspec.Meta(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$",
                                        description='local time at the property, "HH:MM"')]


class ReservationPatch(Strict):
    arrival_date: date | UnsetType = UNSET
    departure_date: date | UnsetType = UNSET
    # a late check-out: the stay leaves at this local time on its departure date (its keys
    # end then); null goes back to the property's check-out time
    departure_time: LocalTime | None | UnsetType = UNSET
    adults: Adults | UnsetType = UNSET
    children: Children | UnsetType = UNSET
    room_type_id: uuid.UUID | UnsetType = UNSET
    rate_plan_id: uuid.UUID | UnsetType = UNSET
    promo_code: PromoCode | None | UnsetType = UNSET
    guest: GuestIn | UnsetType = UNSET
    notes: Text | None | UnsetType = UNSET
    # the company the stay is booked for (staff only; null clears it)
    company_profile_id: uuid.UUID | None | UnsetType = UNSET


class WalkInIn(Strict):
    guest: GuestIn
    departure_date: date | None = None
    nights: Annotated[int, msgspec.Meta(ge=1, le=30)] | None = None
    room_type_id: uuid.UUID | None = None
    rate_plan_id: uuid.UUID | None = None
    adults: Adults = 1
    children: Children = 0
    guest_profile_id: uuid.UUID | None = None
    # the guarantee, a payments-service token reference (required at a kiosk): the
    # stay's total is pre-authorized (a payment intent with manual confirmation, SPEC rule 8)
    payment_method_id: Annotated[PaymentMethodId, msgspec.Meta(
        description="payments-service token reference: the stay's total is pre-authorized "
                    "(required for kiosk tokens)")] | None = None


class RegistrationIn(Strict):
    """Pre-arrival registration card (no payment data: card numbers are refused)."""

    nationality: Annotated[str, msgspec.Meta(pattern=r"^[A-Z]{2}$")] | None = None
    birth_date: date | None = None
    document_type: Literal["PASSPORT", "ID_CARD", "DRIVING_LICENCE", "OTHER"] | None = None
    document_number: Annotated[str, msgspec.Meta(max_length=40)] | None = None
    email: Annotated[str, msgspec.Meta(max_length=254, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")] | None = None
    phone: Annotated[str, msgspec.Meta(max_length=40, pattern=r"^[0-9 +().-]{3,40}$")] | None = None
    address: Annotated[str, msgspec.Meta(max_length=500)] | None = None
    estimated_arrival_time: Annotated[str, msgspec.Meta(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")] | None = None
    purpose_of_stay: Literal["LEISURE", "BUSINESS", "OTHER"] | None = None
    terms_accepted: bool = False


class CheckInIn(Strict):
    room_number: RoomNumber | None = None
    room_id: uuid.UUID | None = None
    # staff only: check in to a room that is not CLEAN/INSPECTED knowingly (audited)
    dirty_room_reason: Reason | None = None


class RoomAssignIn(Strict):
    room_number: RoomNumber | None = None
    room_id: uuid.UUID | None = None


class RevertIn(Strict):
    reason: Reason


class SplitIn(Strict):
    split_date: date


class CommentIn(Strict):
    text: Annotated[str, msgspec.Meta(min_length=1, max_length=4000)]
    internal: bool = True


class MessageIn(Strict):
    direction: Literal["incoming", "outgoing"]
    body: Annotated[str, msgspec.Meta(min_length=1, max_length=8000)]
    subject: ShortText | None = None
    channel: Literal["EMAIL", "SMS", "APP", "KIOSK"] = "EMAIL"


class ServiceRequestIn(Strict):
    kind: Annotated[str, msgspec.Meta(min_length=1, max_length=32,
                                      pattern=r"^[A-Za-z0-9_ -]+$")]
    description: Text | None = None
    due_at: datetime | None = None


class ReservationQuery(ListQuery):
    guest_profile_id: uuid.UUID | None = None
    upcoming: bool | None = None
    last_name: Annotated[str, msgspec.Meta(min_length=1, max_length=120)] | None = None
    confirmation: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | None = None
    status: Literal["CONFIRMED", "CHECKED_IN", "CHECKED_OUT", "CANCELLED", "NO_SHOW"] | None = None
    arrival_date: date | None = None
    block_id: uuid.UUID | None = None  # a room block's reservations (its rooming list)


# -- responses ----------------------------------------------------------------------------------

class ReservationOut(Out):
    id: uuid.UUID
    confirmation_number: str
    property_id: uuid.UUID
    status: ReservationStatus
    arrival_date: date
    departure_date: date
    departure_time: str | None
    nights: int
    adults: int
    children: int
    room_type_id: uuid.UUID
    rate_plan_id: uuid.UUID
    guest_profile_id: uuid.UUID | None
    guest_first_name: str | None
    guest_last_name: str | None
    source: Source
    channel: Channel
    room_id: uuid.UUID | None
    room_number: str | None
    currency: str
    room_total: Decimal
    packages_total: Decimal
    discount_total: Decimal
    total_amount: Decimal
    nightly_prices: list[NightPriceOut]
    promo_code: str | None
    pre_checked_in: bool
    cancellation_fee: Decimal | None
    no_show_fee: Decimal | None
    cancelled_at: datetime | None
    checked_in_at: datetime | None
    checked_out_at: datetime | None
    split_from: uuid.UUID | None
    notes: str | None
    version: int
    created_at: datetime
    updated_at: datetime
    block_id: uuid.UUID | None = None  # picked up from a room block
    # the company the stay is booked for, billed to it or not
    company_profile_id: uuid.UUID | None = None


class SplitOut(Out):
    reservation: ReservationOut
    new_reservation: ReservationOut


class BoardingPassOut(Out):
    reservation_id: uuid.UUID
    confirmation_number: str
    status: ReservationStatus
    guest_first_name: str | None
    guest_last_name: str | None
    room_number: str | None
    arrival_date: date
    departure_date: date
    key_count: int
    property_name: str


class CommentOut(Out):
    id: uuid.UUID
    reservation_id: uuid.UUID
    text: str
    internal: bool
    author_sub: str
    created_at: datetime


class MessageOut(Out):
    id: uuid.UUID
    reservation_id: uuid.UUID
    direction: Literal["incoming", "outgoing"]
    status: MessageStatus
    channel: Literal["EMAIL", "SMS", "APP", "KIOSK"]
    subject: str | None
    body: str
    sent_at: datetime | None
    created_at: datetime


class ServiceRequestOut(Out):
    id: uuid.UUID
    reservation_id: uuid.UUID
    kind: str
    description: str | None
    status: ServiceRequestStatus
    due_at: datetime | None
    created_at: datetime


def reservation_out(r: object) -> ReservationOut:
    """The response shape of a reservation row. PERF: a change builds it for its
    event and again for its response; the second call returns the first one's object when the
    row holds the same data (every column value, mutable ones compared by content, and the
    room number), so callers only serialize it, never change it."""
    room = r.room if r.room_id else None
    room_number = room.room_number if room is not None else None
    data = getattr(r, "__data__", None)
    key = None
    if type(data) is dict:
        key = (tuple(data), room_number,
               tuple(v if type(v) not in _MUTABLE else _frozen(v) for v in data.values()))
        memo = r.__dict__.get("_reservation_out")
        if memo is not None and memo[0] == key:
            return memo[1]
    out = _reservation_out(r, room_number)
    if key is not None:
        r.__dict__["_reservation_out"] = (key, out)
    return out


_MUTABLE = (list, dict)


def _frozen(value: Any) -> Any:
    """A JSON column's value as a comparable snapshot (its content, not its identity; a value
    that cannot be encoded never compares equal, so it is never reused)."""
    try:
        return msgspec.json.encode(value, order="deterministic")
    except (TypeError, ValueError, OverflowError):
        return object()


def _reservation_out(r: Any, room_number: str | None) -> ReservationOut:
    return ReservationOut(
        id=r.id, confirmation_number=r.confirmation_number, property_id=r.property_id,
        status=r.status, arrival_date=r.arrival_date, departure_date=r.departure_date,
        departure_time=getattr(r, "departure_time", None), nights=(r.departure_date - r.arrival_date).days, adults=r.adults, children=r.children,
        room_type_id=r.room_type_id, rate_plan_id=r.rate_plan_id,
        guest_profile_id=r.guest_profile_id, guest_first_name=r.guest_first_name,
        guest_last_name=r.guest_last_name, source=r.source, channel=r.channel,
        room_id=r.room_id, room_number=room_number,
        currency=r.currency, room_total=r.room_total, packages_total=r.packages_total,
        discount_total=r.discount_total, total_amount=r.total_amount,
        nightly_prices=[NightPriceOut(date=date.fromisoformat(str(n["date"])),
                                      amount=Decimal(str(n["amount"])))
                        for n in (r.nightly_prices or [])],
        promo_code=r.promo_code, pre_checked_in=r.pre_checked_in_at is not None,
        cancellation_fee=r.cancellation_fee, no_show_fee=r.no_show_fee,
        cancelled_at=r.cancelled_at, checked_in_at=r.checked_in_at,
        checked_out_at=r.checked_out_at, split_from=r.split_from, notes=r.notes,
        version=r.version, created_at=r.created_at, updated_at=r.updated_at,
        block_id=getattr(r, "block_id", None),
        company_profile_id=getattr(r, "company_profile_id", None),
    )


def comment_out(c: object) -> CommentOut:
    return CommentOut(id=c.id, reservation_id=c.reservation_id, text=c.text,
                      internal=c.internal, author_sub=c.author_sub, created_at=c.created_at)


def message_out(m: object) -> MessageOut:
    return MessageOut(id=m.id, reservation_id=m.reservation_id, direction=m.direction,
                      status=m.status, channel=m.channel, subject=m.subject, body=m.body,
                      sent_at=m.sent_at, created_at=m.created_at)


def service_request_out(s: object) -> ServiceRequestOut:
    return ServiceRequestOut(id=s.id, reservation_id=s.reservation_id, kind=s.kind,
                             description=s.description, status=s.status, due_at=s.due_at,
                             created_at=s.created_at)


class GuaranteeOut(Out):
    """A walk-in's guarantee: the pre-authorization of the stay's total on its guest
    folio (AUTHORIZED; PENDING while the payments service did not answer, reconciled later)."""

    payment_id: uuid.UUID
    folio_id: uuid.UUID
    status: str
    amount: Decimal
    currency: str


class WalkInOut(ReservationOut, kw_only=True):
    """The walk-in reservation, with its guarantee when a payment_method_id was given."""

    guarantee: GuaranteeOut | None = None
