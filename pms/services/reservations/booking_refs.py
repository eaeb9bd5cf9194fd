"""A booking's references and its price: the property, room type and rate plan in one read
(with the stay's rates and restrictions on PostgreSQL: `pms_booking_refs`), the guest (a
profile or a name), the stay's checks (arrival, horizon, occupancy) and its quote under the
plan's rules. Create and edit (pms.services.reservations.reservations) start here.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.dialect import fast_path
from pms.db.statements import Statement
from pms.db.uow import read_scope
from pms.domain.pricing import OPEN, Quote, Rule
from pms.domain.stay import stay_nights
from pms.errors import (
    NotFound,
    RoomTypeUnavailable,
    ValidationFailed,
)
from pms.models import Profile, Property, RatePlan, Reservation, RoomType
from pms.queries.availability import (
    SearchData,
    block_rates,
    load_packages,
    load_promo,
    load_search_data,
)
from pms.queries.stay_through import through_rules
from pms.schemas import reservations as s
from pms.services.corporate.companies import may_book_for_traveler
from pms.services.inventory.availability import rate_plan_open_to
from pms.services.rates.pricing import check_occupancy, quote_for, quote_stay
from pms.services.rates.rate_fence import negotiated_plan_open, require_link_valid
from pms.services.references import unknown_reference
from pms.services.reservations.booking_limits import check_horizon


def _field_error(field: str, message: str, *, code: str = "validation_failed") -> ValidationFailed:
    return ValidationFailed(message, code=code, errors=[{"field": field, "message": message}])


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
        out.append(None if values[0] is None else model.from_columns(values))
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
           promo_code: str | None, *, block_id: uuid.UUID | None = None) -> Quote:
    # The nights are sold under their row locks right after (take_rooms): that recount decides
    # "sold out", so the quote only prices and checks the plan's rules. A room of a block
    # (`block_id`: a pick-up, or a block's reservation changed) honours only the block's own
    # rules (its dates, allocation, rate plan, cut-off): the rate's restrictions (a house-wide
    # stop-sell, a minimum stay, closed to arrival) do not apply to the rooms it holds, and a
    # night of the block's rate grid is priced at its contracted rate.
    if block_id is not None:
        nights = stay_nights(arrival, departure)
        with read_scope(ctx):
            data = load_search_data(refs.prop.id, [refs.room_type], [refs.rate_plan], arrival,
                                    departure, nights, promo_code=promo_code, with_counts=False)
            contracted = block_rates(block_id, refs.room_type.id, nights)
        data.restrictions = {}
        if contracted:
            key = (refs.rate_plan.id, refs.room_type.id)
            data.rates[key] = [contracted.get(day, amount)
                               for day, amount in zip(nights, data.rates_for(*key), strict=True)]
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
