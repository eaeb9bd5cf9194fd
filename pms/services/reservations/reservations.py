"""Reservation use cases: create (folded by confirmation number), edit, cancel, pre-check-in and
walk-in. Each is one unit of work writing the reservation, the inventory change, one outbox row
and one audit row. Front-desk moves live in `checkin`, `checkout` and `stays`.
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

import msgspec
import peewee

from pms.context import Ctx
from pms.db.database import db
from pms.db.dialect import fast_path
from pms.db.fields import JsonField
from pms.db.locking import lock_errors
from pms.db.statements import Statement
from pms.db.uow import UnitOfWork, read_scope, unit_of_work
from pms.domain.business_date import business_date
from pms.domain.fees import cancellation_fee
from pms.domain.pricing import OPEN, Quote, Rule
from pms.domain.states import RESERVATION_INITIAL, RESERVATION_MACHINE, ReservationStatus
from pms.domain.stay import stay_nights
from pms.errors import (
    AlreadyExists,
    Conflict,
    NotFound,
    ReservationNotEditable,
    RoomTypeUnavailable,
    ValidationFailed,
)
from pms.models import Profile, Property, RatePlan, Reservation, Room, RoomStay, RoomType
from pms.queries.availability import SearchData, load_packages, load_promo, load_search_data
from pms.queries.lookups import load_reservation
from pms.queries.stay_through import through_rules
from pms.schemas import reservations as s
from pms.schemas.common import to_data
from pms.services.cashiering.folios import close_settled_folios
from pms.services.catalog.catalog import load_property
from pms.services.corporate import company_billing
from pms.services.corporate.companies import may_book_for_traveler
from pms.services.groups import room_block_inventory
from pms.services.inventory import allotments
from pms.services.inventory.availability import rate_plan_open_to
from pms.services.inventory.inventory import lock_inventory, release_rooms, take_rooms
from pms.services.keys import stay_hooks
from pms.services.rates.pricing import check_occupancy, quote_for, quote_stay
from pms.services.rates.rate_fence import negotiated_plan_open, require_link_valid
from pms.services.references import unknown_reference
from pms.services.reservations.booking_limits import check_guest_limit, check_horizon
from pms.services.reservations.room_holds import check_room, hold_room, release_room_holds

CONFIRMATION_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


class _Duplicate(Exception):
    """Internal: the confirmation number exists; abort the UoW and return the existing row."""


def _field_error(field: str, message: str, *, code: str = "validation_failed") -> ValidationFailed:
    return ValidationFailed(message, code=code, errors=[{"field": field, "message": message}])


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

@dataclass
class Refs:
    prop: Property
    room_type: RoomType
    rate_plan: RatePlan
    prices: StayPrices | None = None  # the stay's, read with them (PostgreSQL create)


def _load_refs(property_id: uuid.UUID, room_type_id: uuid.UUID, rate_plan_id: uuid.UUID, *,
               offered_to: Ctx | None = None, stay: tuple[date, date] | None = None,
               fence: tuple[Ctx, uuid.UUID | None] | None = None) -> Refs:
    """The property, room type and rate plan of a booking, else NotFound / 422.

    With `offered_to`, the plan must also be open to that caller (`rate_plan_open_to`: a
    negotiated plan only for the company it is negotiated for). A plan that is not gets the
    answer of a plan that does not exist, so a guest cannot probe negotiated plan ids.
    """
    prop, room_type, rate_plan, prices = _read_refs(property_id, room_type_id, rate_plan_id,
                                                    stay)
    if prop is None:
        raise NotFound("no such property")
    if room_type is None:
        raise _field_error("room_type_id", "room_type_id is not a room type of this property")
    if rate_plan is None or (
            offered_to is not None and not rate_plan_open_to(offered_to, rate_plan)):
        raise _field_error("rate_plan_id", "rate_plan_id is not a rate plan of this property")
    if fence is not None and rate_plan.negotiated:
        # the rate fence of the corporate search: a named company the plan is
        # negotiated for, that the caller may book for; holders get the unknown-plan answer
        ctx, company_id = fence
        if not negotiated_plan_open(ctx, rate_plan, company_id):
            if ctx.holder_id is not None:
                raise _field_error("rate_plan_id",
                                   "rate_plan_id is not a rate plan of this property")
            raise _field_error("company_profile_id", "rate_plan_id is a negotiated plan: name "
                               "a company_profile_id it is negotiated for",
                               code="rate_plan_not_negotiated_for_company")
        if stay is not None:  # the link's validity dates: every night of the stay
            require_link_valid(ctx, rate_plan, company_id, stay)
    return Refs(prop, room_type, rate_plan, prices)


_REF_MODELS = (Property, RoomType, RatePlan)


def _columns(model: type, alias: str) -> str:
    return ", ".join(f"{alias}.{f.column_name}" for f in model._meta.sorted_fields)


# The property with the booked room type and rate plan in ONE read (PERF, three by-id
# reads before). The room type and the plan must belong to the property: an outer join that
# finds none leaves their columns NULL, read as "not of this property".
_REFS_FROM = (
    "FROM property p "
    "LEFT JOIN room_type rt ON rt.env_id = %(env)s AND rt.id = %(room_type)s "
    "AND rt.property_id = p.id "
    "LEFT JOIN rate_plan rp ON rp.env_id = %(env)s AND rp.id = %(rate_plan)s "
    "AND rp.property_id = p.id "
    "WHERE p.env_id = %(env)s AND p.id = %(property)s")
_REFS = Statement.text("reservations.refs", both=(
    f"SELECT {_columns(Property, 'p')}, {_columns(RoomType, 'rt')}, {_columns(RatePlan, 'rp')} "
    + _REFS_FROM))


# PostgreSQL: the same read with the stay's rates and its restrictions that apply to the plan
# and room type (json arrays), so the booking prices without two more reads. It is the PL/pgSQL
# function `pms_booking_refs` (migrations 013, 030), whose plan the server keeps per connection
# (PERF: planning it cost more than running it). It returns the three rows whole (their tables'
# row types, migration 030); the columns are named here as the models list them, so a column
# added to a table needs no change to the function.
def _row_columns(model: type, alias: str) -> str:
    return ", ".join(f"({alias}).{f.column_name}" for f in model._meta.sorted_fields)


_REFS_AND_PRICES = Statement.text("reservations.refs_and_prices", postgres=(
    f"SELECT {_row_columns(Property, 'b.p_row')}, {_row_columns(RoomType, 'b.rt_row')}, "
    f"{_row_columns(RatePlan, 'b.rp_row')}, b.stay_rates, b.stay_restrictions "
    "FROM pms_booking_refs(%(env)s, %(property)s, %(room_type)s, %(rate_plan)s, "
    "%(arrival)s, %(departure)s) b"))


@dataclass
class StayPrices:
    """The stay's nightly amounts and its restrictions that are not open, read with the
    references (in `SearchData`'s shapes)."""

    amounts: list[Decimal | None]
    restrictions: dict[date, list[tuple[None, None, Rule]]]


def _read_refs_priced(property_id: uuid.UUID, room_type_id: uuid.UUID, rate_plan_id: uuid.UUID,
                      stay: tuple[date, date] | None = None
                      ) -> tuple[Any, Any, Any, StayPrices | None]:
    """`_read_refs` with the stay's prices read in the same statement (PostgreSQL)."""
    priced = stay is not None and 0 < (stay[1] - stay[0]).days <= 400
    return _refs_row(property_id, room_type_id, rate_plan_id, stay if priced else None)


@fast_path(_read_refs_priced)
def _read_refs(property_id: uuid.UUID, room_type_id: uuid.UUID, rate_plan_id: uuid.UUID,
               stay: tuple[date, date] | None = None) -> tuple[Any, Any, Any, StayPrices | None]:
    """(property, room type, rate plan) models, None for what is missing (call in a scope),
    and with `stay` where the database reads them with the references (PostgreSQL) the
    stay's prices (else None: `quote_stay` reads them)."""
    return _refs_row(property_id, room_type_id, rate_plan_id, None)


def _refs_row(property_id: uuid.UUID, room_type_id: uuid.UUID, rate_plan_id: uuid.UUID,
              stay: tuple[date, date] | None) -> tuple[Any, Any, Any, StayPrices | None]:
    """The references, and with `stay` the stay's prices, in one statement."""
    if stay is not None:
        row = _REFS_AND_PRICES.one(property=property_id, room_type=room_type_id,
                                   rate_plan=rate_plan_id, arrival=stay[0], departure=stay[1])
    else:
        row = _REFS.one(property=property_id, room_type=room_type_id, rate_plan=rate_plan_id)
    if row is None:
        return None, None, None, None
    out: list[Any] = []
    start = 0
    for model in _REF_MODELS:
        fields = model._meta.sorted_fields
        values = row[start:start + len(fields)]
        start += len(fields)
        out.append(None if values[0] is None else _model_of(model, fields, values))
    prices = (_stay_prices(stay[0], stay[1], row[start], row[start + 1])
              if stay is not None else None)
    return out[0], out[1], out[2], prices


def _stay_prices(arrival: date, departure: date, rates: Any, restrictions: Any) -> StayPrices:
    """Nightly amounts aligned with the nights, and the rules that are not open per date
    (the plan and room type filter was the statement's; `SearchData.rules_for` merges)."""
    amounts: list[Decimal | None] = [None] * (departure - arrival).days
    for day, amount in rates or ():
        amounts[(date.fromisoformat(day) - arrival).days] = Decimal(amount)
    per_day: dict[date, list[tuple[None, None, Rule]]] = {}
    for day, closed, cta, ctd, min_los, max_los in restrictions or ():
        rule = Rule(closed=bool(closed), closed_to_arrival=bool(cta),
                    closed_to_departure=bool(ctd), min_los=min_los, max_los=max_los)
        if rule != OPEN:
            per_day.setdefault(date.fromisoformat(day), []).append((None, None, rule))
    return StayPrices(amounts, per_day)


def _model_of(model: Any, fields: Any, values: Any) -> Any:
    # the object peewee's cursor wrapper would build (as TenantModel.fetch does), with the
    # readers worked out once per model (PERF: a python_value call per column before)
    readers = _READERS.get((model, len(fields)))
    if readers is None:
        readers = _READERS[(model, len(fields))] = tuple(_reader(f) for f in fields)
    data = {}
    for (name, passes, convert), value in zip(readers, values, strict=True):
        data[name] = value if value is None or type(value) in passes else convert(value)
    obj = model.__new__(model)
    obj.__data__ = data
    obj._dirty = set()
    obj.__rel__ = {}
    return obj


_READERS: dict[Any, tuple[tuple[str, frozenset[type], Any], ...]] = {}
# Value types that a field type's python_value returns unchanged, by the function that reads
# (peewee's Field.python_value defers to `adapt`); a field read otherwise is always converted.
_READ_PASSING: dict[Any, frozenset[type]] = {
    peewee._StringField.adapt: frozenset({str}),
    peewee.IntegerField.adapt: frozenset({int}),
    peewee.DateField.adapt: frozenset({date}),
    peewee.BooleanField.adapt: frozenset({bool}),
    peewee.UUIDField.python_value: frozenset({uuid.UUID}),
    JsonField.python_value: frozenset({dict, list, int, float, bool}),
}


def _reader(field: Any) -> tuple[str, frozenset[type], Any]:
    """(name, value types read unchanged, the field's python_value)."""
    kind = type(field)
    if isinstance(field, peewee.ForeignKeyField) and \
            type(field.rel_field).python_value is peewee.UUIDField.python_value:
        passes = frozenset({uuid.UUID})  # (a related row object is never in a fetched row)
    elif kind.python_value is peewee.Field.python_value:
        passes = _READ_PASSING.get(kind.adapt, frozenset())
    else:
        passes = _READ_PASSING.get(kind.python_value, frozenset())
    return field.name, passes, field.python_value


def _check_stay(refs: Refs, arrival: date, departure: date, adults: int, children: int,
                today: date, *, check_arrival: bool = True) -> list[date]:
    nights = stay_nights(arrival, departure)
    if check_arrival and arrival < today:
        raise _field_error("arrival_date", f"arrival_date {arrival} is before the property's "
                           f"current date {today}", code="arrival_in_past")
    if check_arrival:
        check_horizon(refs.prop, arrival, today)
    if adults + children > refs.room_type.max_occupancy:
        raise _field_error("adults", f"{adults + children} guests exceed the room type's "
                           f"maximum occupancy of {refs.room_type.max_occupancy}",
                           code="occupancy_exceeded")
    return nights


def _quote(ctx: Ctx, refs: Refs, arrival: date, departure: date, adults: int, children: int,
           promo_code: str | None, *, in_block: bool = False) -> Quote:
    # The nights are sold under their row locks right after (take_rooms): that recount decides
    # "sold out", so the quote only prices and checks the plan's rules. A room of a block
    # (`in_block`: a pick-up, or a block's reservation changed) honours only the block's own
    # rules (its dates, allocation, rate plan, cut-off): the rate's restrictions (a house-wide
    # stop-sell, a minimum stay, closed to arrival) do not apply to the rooms it holds.
    if in_block:
        with read_scope(ctx):
            data = load_search_data(refs.prop.id, [refs.room_type], [refs.rate_plan], arrival,
                                    departure, stay_nights(arrival, departure),
                                    promo_code=promo_code, with_counts=False)
        data.restrictions = {}
        quote = quote_for(data, refs.room_type, refs.rate_plan, adults=adults,
                          children=children, promo_code=promo_code)
    elif refs.prices is not None:  # read with the references: price without more reads
        check_occupancy(adults, children)
        with read_scope(ctx):
            packages = (load_packages(refs.prop.id) if refs.rate_plan.package_codes else {})
            promo = load_promo(refs.prop.id, promo_code) if promo_code is not None else None
            # the through-stay lengths, which pms_booking_refs does not return
            through = through_rules(refs.prop, refs.rate_plan, refs.room_type, arrival,
                                    departure)
        restrictions = refs.prices.restrictions
        if through:
            restrictions = {**restrictions}
            for day, rules in through.items():
                restrictions[day] = [*restrictions.get(day, []), *rules]
        data = SearchData(arrival=arrival, departure=departure,
                          nights=stay_nights(arrival, departure),
                          rates={(refs.rate_plan.id, refs.room_type.id): refs.prices.amounts},
                          restrictions=restrictions, sellable=None,
                          packages=packages, promo=promo)
        quote = quote_for(data, refs.room_type, refs.rate_plan, adults=adults,
                          children=children, promo_code=promo_code)
    else:
        quote = quote_stay(ctx, property=refs.prop, room_type=refs.room_type,
                           rate_plan=refs.rate_plan, arrival=arrival, departure=departure,
                           adults=adults, children=children, promo_code=promo_code,
                           check_inventory=False)
    if quote.bookable:
        return quote
    codes = {r.code for r in quote.reasons}
    if codes == {"sold_out"}:
        raise RoomTypeUnavailable("no room of this type is available for every night",
                                  nights=[str(r.date) for r in quote.reasons if r.date])
    reasons = [r for r in quote.reasons if r.code != "sold_out"]
    raise ValidationFailed(
        "the stay cannot be booked under this rate plan: "
        + "; ".join(f"{r.message}" + (f" ({r.date})" if r.date else "") for r in reasons),
        code="stay_not_bookable",
        errors=[{"field": "promo_code" if r.code.startswith("promo") else "rate_plan_id",
                 "message": f"{r.code}: {r.message}"} for r in reasons],
        reasons=[{"code": r.code, "message": r.message,
                  "date": r.date.isoformat() if r.date else None} for r in reasons])


def _apply_quote(row: Reservation, quote: Quote) -> None:
    row.currency = quote.currency
    row.room_total = quote.room_total
    row.packages_total = quote.packages_total
    row.discount_total = quote.discount_total
    row.total_amount = quote.total
    row.nightly_prices = [{"date": n.date.isoformat(), "amount": str(n.amount)}
                          for n in quote.nights]


def _guest(ctx: Ctx, profile_id: uuid.UUID | None, guest: s.GuestIn | None,
           company_id: uuid.UUID | None = None
           ) -> tuple[uuid.UUID | None, str | None, str | None]:
    if ctx.holder_id is not None:
        if profile_id is not None and profile_id != ctx.holder_id:
            # a company's ADMIN or BOOKER books for another traveler of the company;
            # anyone else's profile answers 404 to a holder session (CONTRACT §2, kept over
            # 's 422 rule, which applies to every other caller)
            if company_id is None or not may_book_for_traveler(ctx, company_id, profile_id):
                raise NotFound("no such profile")
        else:
            profile_id = ctx.holder_id
    first = guest.first_name if guest else None
    last = guest.last_name if guest else None
    if profile_id is not None:
        profile = Profile.select().where(Profile.id == profile_id).first()
        if profile is None:
            raise unknown_reference("guest_profile_id", "guest_profile_id is not a known profile")
        first = first or profile.first_name
        last = last or profile.last_name or profile.company_name
    if not last:
        raise _field_error("guest", "a guest name (guest.last_name) or a guest_profile_id "
                           "with a name is required")
    return profile_id, first, last


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
                           body.children, body.promo_code, in_block=pickup is not None)
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
    else:
        try:
            take_rooms(refs.prop.id, refs.room_type.id, nights, first=insert)
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
                       in_block=row.block_id is not None)
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
                take_rooms(refs.prop.id, room_type_id, new_nights)
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
