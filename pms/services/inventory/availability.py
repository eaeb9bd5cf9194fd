"""Availability searches: property, env-wide and corporate, all through one calculation.

`search_property` reads the property with its catalog (room types, rate plans, packages: cached
per catalog version, `pms.queries.catalog.property_catalog`), then the stay's rates, restrictions
and rooms for sale with a fixed handful of compiled statements (`pms.queries.availability`), and
prices every (room type, rate plan) with `pms.services.rates.pricing.quote_for`, the same function
behind `quote_stay`. Reads only; no model objects on the way.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from pms.clock import local_today
from pms.context import Ctx
from pms.db.uow import read_scope
from pms.domain.availability import LAST_SEARCH_DEPARTURE
from pms.domain.stay import stay_nights
from pms.errors import NotFound, ValidationFailed
from pms.models.catalog import RatePlan
from pms.models.profiles import Profile
from pms.models.property import Property
from pms.queries.availability import load_search_data
from pms.queries.catalog import Catalog, PropertyHead, RatePlanRow, RoomTypeRow, property_catalog
from pms.schemas import availability as s
from pms.services.corporate.companies import may_act_for_company
from pms.services.rates.pricing import check_occupancy, quote_for

MAX_SEARCH_NIGHTS = 90
MAX_ENV_PROPERTIES = 200


@dataclass(frozen=True)
class Search:
    arrival: date
    departure: date
    adults: int
    children: int
    room_type_id: uuid.UUID | None = None
    rate_plan_ids: frozenset[uuid.UUID] | None = None
    promo_code: str | None = None
    include_unavailable: bool = True


def _nights(search: Search) -> list[date]:
    for name, day in (("arrival_date", search.arrival), ("departure_date", search.departure)):
        if day > LAST_SEARCH_DEPARTURE:
            raise ValidationFailed(f"{name} must be on or before {LAST_SEARCH_DEPARTURE}",
                                   code="date_out_of_range",
                                   errors=[{"field": name, "message": "too far in the future"}])
    nights = stay_nights(search.arrival, search.departure)
    if len(nights) > MAX_SEARCH_NIGHTS:
        raise ValidationFailed(f"a search covers at most {MAX_SEARCH_NIGHTS} nights",
                               errors=[{"field": "departure_date",
                                        "message": f"at most {MAX_SEARCH_NIGHTS} nights"}])
    check_occupancy(search.adults, search.children)
    return nights


def _check_not_past(prop: PropertyHead, search: Search, ctx: Ctx) -> None:
    today = prop.business_date or local_today(ctx.now, prop.timezone)
    if search.arrival < today:
        raise ValidationFailed(f"arrival_date is before the property's date ({today})",
                               code="arrival_in_past",
                               errors=[{"field": "arrival_date", "message": "in the past"}])


def _plans(catalog: Catalog, search: Search,
           negotiated_ids: Sequence[uuid.UUID] | None) -> list[RatePlanRow]:
    """Plans on offer, by code: public ones, or (corporate) only the company's negotiated ones."""
    if search.rate_plan_ids is not None:
        known = {p.id for p in catalog.rate_plans}
        unknown = sorted(str(i) for i in search.rate_plan_ids - known)
        if unknown:
            raise ValidationFailed("rate_plan_ids names rate plans this property does not have",
                                   errors=[{"field": "rate_plan_ids",
                                            "message": f"unknown: {', '.join(unknown)}"}])
    if negotiated_ids is None:
        plans = [p for p in catalog.rate_plans if p.active and not p.negotiated]
    else:
        if not negotiated_ids:
            return []
        wanted = set(negotiated_ids)
        plans = [p for p in catalog.rate_plans if p.active and p.negotiated and p.id in wanted]
    if search.rate_plan_ids is not None:
        plans = [p for p in plans if p.id in search.rate_plan_ids]
    return plans


def _room_types(catalog: Catalog, search: Search) -> list[RoomTypeRow]:
    """Room types by sort order and code (one, with room_type_id)."""
    if search.room_type_id is None:
        return list(catalog.room_types)
    rows = [rt for rt in catalog.room_types if rt.id == search.room_type_id]
    if not rows:
        raise ValidationFailed("room_type_id is not a room type of this property",
                               errors=[{"field": "room_type_id", "message": "unknown room type"}])
    return rows


def _search_loaded(prop: PropertyHead, catalog: Catalog, search: Search, nights: list[date],
                   negotiated_ids: Sequence[uuid.UUID] | None,
                   company_id: uuid.UUID | None = None, *, ctx: Ctx) -> s.AvailabilityOut:
    """The calculation itself; call inside a read scope."""
    room_types = _room_types(catalog, search)
    plans = _plans(catalog, search, negotiated_ids)
    data = load_search_data(prop.id, room_types, plans, search.arrival, search.departure, nights,
                            promo_code=search.promo_code, packages=catalog.packages,
                            rates_version=catalog.version,
                            business_date=prop.business_date or local_today(ctx.now,
                                                                            prop.timezone))
    out_types = []
    for rt in room_types:
        sellable = data.sellable_for(rt.id)
        available = min(sellable, default=0) if sellable is not None else 0
        offers = []
        for plan in plans:
            quote = quote_for(data, rt, plan, adults=search.adults, children=search.children,
                              promo_code=search.promo_code)
            if not quote.bookable and not search.include_unavailable:
                continue
            offers.append(s.OfferOut(
                rate_plan_id=plan.id, rate_plan_code=plan.code, rate_plan_name=plan.name,
                negotiated=plan.negotiated, bookable=quote.bookable,
                available=quote.available or 0, currency=quote.currency,
                nights=quote.nights, room_total=quote.room_total,
                packages_total=quote.packages_total, discount_total=quote.discount_total,
                total=quote.total, reasons=quote.reasons))
        offers.sort(key=lambda o: (not o.bookable, o.total, o.rate_plan_code))
        if offers or search.include_unavailable:
            out_types.append(s.RoomTypeAvailabilityOut(
                room_type_id=rt.id, code=rt.code, name=rt.name, max_occupancy=rt.max_occupancy,
                available=max(available, 0), offers=offers))
    return s.AvailabilityOut(
        property_id=prop.id, property_code=prop.code, arrival_date=search.arrival,
        departure_date=search.departure, nights=len(nights), adults=search.adults,
        children=search.children, company_profile_id=company_id, room_types=out_types)


def _search_of(body: s.AvailabilityIn) -> Search:
    return Search(arrival=body.arrival_date, departure=body.departure_date, adults=body.adults,
                  children=body.children, room_type_id=body.room_type_id,
                  rate_plan_ids=frozenset(body.rate_plan_ids) if body.rate_plan_ids else None,
                  promo_code=body.promo_code, include_unavailable=body.include_unavailable)


# -- who may see a company's negotiated plans ---------------------------------------------------

def holder_bound_to_company(ctx: Ctx, company_id: uuid.UUID) -> bool:
    """Whether the caller may act for that company: staff and channels (no holder) always; a
    holder session (guest or traveler token) only when its holder_id is the company's profile id
    (CONTRACT §2: company rows are guarded by the company profile id)."""
    return ctx.holder_id is None or ctx.holder_id == company_id


def negotiated_plan_ids(company: Profile) -> list[uuid.UUID]:
    """The plans a company profile's preferences.negotiated_rate_plan_ids list (bad ids skipped)."""
    ids = []
    for raw in (company.preferences or {}).get("negotiated_rate_plan_ids") or []:
        try:
            ids.append(uuid.UUID(str(raw)))
        except ValueError:
            continue
    return ids


LINK_VALIDITY = "negotiated_rate_validity"  # {plan id: {"valid_from", "valid_to"}} (ISO dates)


def link_validity(company: Profile) -> dict[uuid.UUID, tuple[date | None, date | None]]:
    """The validity dates of the company's rate links that have any (inclusive; None: open
    on that side); a link not in it is valid on every date."""
    out = {}
    for raw, dates in ((company.preferences or {}).get(LINK_VALIDITY) or {}).items():
        try:
            out[uuid.UUID(str(raw))] = tuple(  # type: ignore[assignment]
                None if dates.get(k) is None else date.fromisoformat(dates[k])
                for k in ("valid_from", "valid_to"))
        except (ValueError, AttributeError, TypeError):
            continue
    return out


def link_covers(company: Profile, plan_id: uuid.UUID, arrival: date, departure: date) -> bool:
    """Whether every night of the stay (arrival .. the night before departure) falls within
    the validity of the company's link to the plan (OPERA's begin and end dates of a
    negotiated rate: the stay's dates are checked, not only its arrival)."""
    valid_from, valid_to = link_validity(company).get(plan_id, (None, None))
    last_night = departure - timedelta(days=1)
    return ((valid_from is None or arrival >= valid_from)
            and (valid_to is None or last_night <= valid_to))


def rate_plan_open_to(ctx: Ctx, plan: RatePlan) -> bool:
    """Whether the caller may be offered (and so book) `plan`; call inside a scope.

    The rule of the corporate search, for one plan: a public plan is open to everyone; a
    negotiated one to staff and channels, and to a holder session only when it is bound to a
    company (`holder_bound_to_company`) whose negotiated plans list it. Booking by rate_plan_id
    uses this, so a guest cannot book what the corporate search would never offer it.
    """
    if not plan.negotiated:
        return True
    if ctx.client_kind in ("kiosk", "anonymous"):  # never staff, whatever the token
        return False
    if ctx.holder_id is None:
        return True
    company = Profile.get_or_none((Profile.id == ctx.holder_id) & (Profile.kind == "COMPANY"))
    return (company is not None and holder_bound_to_company(ctx, company.id)
            and plan.id in negotiated_plan_ids(company))


def search_property(ctx: Ctx, property_id: uuid.UUID, body: s.AvailabilityIn) -> s.AvailabilityOut:
    """Public availability of one property: every active, non-negotiated rate plan.

    Raises:
        NotFound: no such property.
        ValidationFailed: bad dates (departure not after arrival, over 90 nights, arrival before
            the property's date: arrival_in_past), bad occupancy, unknown room type.
    """
    search = _search_of(body)
    nights = _nights(search)
    with read_scope(ctx):
        prop, catalog = property_catalog(property_id)
        _check_not_past(prop, search, ctx)
        return _search_loaded(prop, catalog, search, nights, None, ctx=ctx)


def search_corporate(ctx: Ctx, property_id: uuid.UUID,
                     body: s.CorporateAvailabilityIn) -> s.AvailabilityOut:
    """Availability for a company: only the negotiated plans listed in its profile's
    preferences.negotiated_rate_plan_ids; public plans are withheld, with no fallback. Without
    company_profile_id it is the public search.

    A holder session gets a company's negotiated plans only when it may act for that company:
    its holder_id is the company profile id, or it is a traveler session bound to the company
    as a company user (CONTRACT §2: company rows are guarded by the company profile
    id). Any other company answers 404, whether it
    exists or not, so the search is no oracle of company ids either.

    Raises:
        NotFound: no such property; a company a holder session is not bound to.
        ValidationFailed: as `search_property`, and a company_profile_id that is not a company
            profile of this env (staff).
    """
    search = _search_of(body)
    nights = _nights(search)
    with read_scope(ctx):
        # the rate fence's rule (pms.services.rates.rate_fence): the company's own token or a
        # traveler session bound to it; anyone else: 404, existing or not
        if (body.company_profile_id is not None and ctx.holder_id is not None
                and not may_act_for_company(ctx, body.company_profile_id, booking=False)):
            raise NotFound("no such company profile")
        prop, catalog = property_catalog(property_id)
        _check_not_past(prop, search, ctx)
        if body.company_profile_id is None:
            return _search_loaded(prop, catalog, search, nights, None, ctx=ctx)
        company = Profile.get_or_none((Profile.id == body.company_profile_id)
                                      & (Profile.kind == "COMPANY"))
        if company is None:
            raise ValidationFailed("company_profile_id is not a company profile",
                                   errors=[{"field": "company_profile_id",
                                            "message": "unknown company profile"}])
        # a link with validity dates offers its plan only for stays within them
        plan_ids = [i for i in negotiated_plan_ids(company)
                    if link_covers(company, i, search.arrival, search.departure)]
        return _search_loaded(prop, catalog, search, nights, plan_ids, company.id, ctx=ctx)


def search_env(ctx: Ctx, query: s.AvailabilityQuery,
               admits: Callable[[Any], bool] | None = None) -> s.EnvAvailabilityOut:
    """Public availability of every property of the env (or one, with property_id), of those
    `admits` (the env's policies' row filter, from the route gate) lets the caller see.

    A property where the arrival date has already passed (its local date) is left out; an
    arrival before the earliest date on Earth (UTC-12) is refused.

    Raises:
        ValidationFailed: bad dates or occupancy (as `search_property`).
    """
    search = Search(arrival=query.arrival_date, departure=query.departure_date,
                    adults=query.adults, children=query.children, promo_code=query.promo_code,
                    include_unavailable=query.include_unavailable)
    nights = _nights(search)
    if search.arrival < (ctx.now - timedelta(hours=12)).date():
        raise ValidationFailed("arrival_date is in the past", code="arrival_in_past",
                               errors=[{"field": "arrival_date", "message": "in the past"}])
    with read_scope(ctx):
        props = Property.select().order_by(Property.code).limit(MAX_ENV_PROPERTIES)
        if query.property_id is not None:
            props = props.where(Property.id == query.property_id)
        results = []
        for prop in props:
            if admits is not None and not admits(prop.id):
                continue
            today = prop.business_date or local_today(ctx.now, prop.timezone)
            if search.arrival < today:
                continue
            head, catalog = property_catalog(prop.id)
            results.append(_search_loaded(head, catalog, search, nights, None, ctx=ctx))
    return s.EnvAvailabilityOut(data=results)
