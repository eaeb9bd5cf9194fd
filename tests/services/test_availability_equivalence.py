"""The availability search answers byte for byte what it answered before its rework.

The oracle below is the search as it was (peewee models, one row per night, per-night pricing
with `NightCount`s), kept here verbatim in substance. A seeded hotel exercises every input of
the calculation: rooms and maintenance (out of order and out of service overlapping), sell
limits (none, zero, negative, above the rooms), rooms sold (some oversold), rooms held by room
blocks (the oracle counts them through `NightCount.sellable`, the one formula), restrictions (closed,
closed to arrival or departure, stay lengths; for a plan, a room type, both or neither), nights
without a rate, packages of every calculation (one in another currency), promo codes, inactive
and negotiated plans, a plan in another currency, and the search options (room type, rate plan
ids, include_unavailable, occupancy). Both backends.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import date, timedelta
from decimal import Decimal

import msgspec
import pytest

from pms.db.uow import read_scope, unit_of_work
from pms.domain.availability import NightCount
from pms.domain.money import quantize, zero
from pms.domain.pricing import (
    OPEN,
    NightPrice,
    PackageLine,
    Quote,
    Reason,
    Rule,
    merge_rules,
    package_amount,
    promo_discount,
    promo_problem,
    stay_reasons,
)
from pms.domain.stay import stay_nights
from pms.models.catalog import Package, RatePlan
from pms.models.inventory import InventoryDay, Maintenance
from pms.models.profiles import Profile
from pms.models.property import Property, RoomType
from pms.models.rates import PromoCode, RateSchedule, Restriction
from pms.queries.availability import promo_of
from pms.queries.inventory_counts import night_counts
from pms.schemas import availability as s
from pms.schemas.availability import AvailabilityIn, CorporateAvailabilityIn
from pms.services.inventory import availability
from tests.factories import make_package, make_property, make_rate_plan, make_room, make_room_type

pytestmark = pytest.mark.usefixtures("database")

ARR = date(2031, 2, 1)
DAYS = 20


# -- the oracle: the search as it was before its rework --------------------------------------------

def _old_price_stay(*, nights, departure, currency, rates, rules, adults, children, max_occupancy,
                    packages, sellable, promo, promo_code, rate_plan_id, active) -> Quote:
    count = len(nights)
    persons = adults + children
    reasons = stay_reasons(nights, departure, rules, persons=persons,
                           max_occupancy=max_occupancy, active=active)
    priced = []
    available = None
    for night in nights:
        if rules and rules.get(night, OPEN).closed:
            reasons.append(Reason("closed", "the rate is closed on this night", night))
        amount = rates.get(night)
        if amount is None:
            reasons.append(Reason("no_rate", "no rate is loaded for this night", night))
        else:
            priced.append(NightPrice(night, quantize(amount, currency)))
        if sellable is not None:
            left = max(sellable.get(night, 0), 0)
            available = left if available is None else min(available, left)
            if left == 0:
                reasons.append(Reason("sold_out", "no room of this type is left on this night",
                                      night))
    room_total = sum((p.amount for p in priced), zero(currency))
    packages_total = zero(currency)
    for pkg in packages:
        if pkg.currency != currency:
            reasons.append(Reason("package_currency_mismatch",
                                  f"package {pkg.code} is priced in {pkg.currency}, not {currency}"))
            continue
        packages_total += quantize(package_amount(pkg, nights=count, persons=persons), currency)
    discount = zero(currency)
    if promo_code is not None:
        problem = promo_problem(promo, promo_code, arrival=nights[0], nights=count,
                                rate_plan_id=rate_plan_id or uuid.UUID(int=0), currency=currency)
        if problem is not None:
            reasons.append(problem)
        elif promo is not None:
            discount = promo_discount(promo, room_total, currency)
    if sellable is not None and available is None:
        available = 0
    return Quote(nights=priced, room_total=room_total, packages_total=packages_total,
                 discount_total=discount, total=room_total + packages_total - discount,
                 currency=currency, bookable=not reasons, reasons=reasons, available=available,
                 promo_code=promo_code)


def _old_search(ctx, property_id, body, negotiated_ids=None, company_id=None) -> s.AvailabilityOut:
    arrival, departure = body.arrival_date, body.departure_date
    nights = stay_nights(arrival, departure)
    plan_filter = frozenset(body.rate_plan_ids) if body.rate_plan_ids else None
    with read_scope(ctx):
        prop = Property.get_by_id(property_id)
        query = RoomType.select().where(RoomType.property == prop.id)
        if body.room_type_id is not None:
            query = query.where(RoomType.id == body.room_type_id)
        room_types = list(query.order_by(RoomType.sort_order, RoomType.code))
        query = RatePlan.select().where((RatePlan.property == prop.id) & RatePlan.active)
        if negotiated_ids is None:
            query = query.where(RatePlan.negotiated == False)  # noqa: E712
            plans = list(query.order_by(RatePlan.code))
        else:
            plans = list(query.where(RatePlan.negotiated & RatePlan.id.in_(negotiated_ids))
                         .order_by(RatePlan.code)) if negotiated_ids else []
        if plan_filter is not None:
            plans = [p for p in plans if p.id in plan_filter]
        rt_ids, plan_ids = [rt.id for rt in room_types], [p.id for p in plans]
        rates = defaultdict(dict)
        if rt_ids and plan_ids:
            for row in RateSchedule.select().where(
                    (RateSchedule.property == prop.id) & RateSchedule.rate_plan.in_(plan_ids)
                    & RateSchedule.room_type.in_(rt_ids) & (RateSchedule.date >= arrival)
                    & (RateSchedule.date < departure)):
                rates[(row.rate_plan_id, row.room_type_id)][row.date] = row.amount
        restrictions = defaultdict(list)
        for r in Restriction.select().where(
                (Restriction.property == prop.id) & (Restriction.date >= arrival)
                & (Restriction.date <= departure)
                & (Restriction.rate_plan.is_null() | Restriction.rate_plan.in_(plan_ids or [None]))
                & (Restriction.room_type.is_null() | Restriction.room_type.in_(rt_ids or [None]))):
            rule = Rule(closed=r.closed, closed_to_arrival=r.closed_to_arrival,
                        closed_to_departure=r.closed_to_departure, min_los=r.min_los,
                        max_los=r.max_los)
            if rule != OPEN:
                restrictions[r.date].append((r.rate_plan_id, r.room_type_id, rule))
        packages = {p.code: PackageLine(p.code, p.calculation, p.price, p.currency)
                    for p in Package.select().where(Package.property == prop.id)}
        promo = None
        if body.promo_code is not None:
            row = PromoCode.get_or_none((PromoCode.property == prop.id)
                                        & (PromoCode.code == body.promo_code.strip().upper()))
            promo = promo_of(row) if row is not None else None
        counts: dict[tuple[uuid.UUID, date], NightCount] = night_counts(
            prop.id, rt_ids, arrival, arrival + timedelta(days=len(nights)))
    out_types = []
    for rt in room_types:
        sellable = {n: counts[(rt.id, n)].sellable for n in nights}
        available = min((sellable.get(n, 0) for n in nights), default=0)
        offers = []
        for plan in plans:
            rules = {}
            for day, rows in restrictions.items():
                applicable = [rule for p, t, rule in rows
                              if (p is None or p == plan.id) and (t is None or t == rt.id)]
                if applicable:
                    rules[day] = merge_rules(applicable)
            quote = _old_price_stay(
                nights=nights, departure=departure, currency=plan.currency,
                rates=rates.get((plan.id, rt.id), {}), rules=rules, adults=body.adults,
                children=body.children, max_occupancy=rt.max_occupancy,
                packages=[packages[c] for c in (plan.package_codes or []) if c in packages],
                sellable=sellable, promo=promo, promo_code=body.promo_code,
                rate_plan_id=plan.id, active=bool(plan.active))
            if not quote.bookable and not body.include_unavailable:
                continue
            offers.append(s.OfferOut(
                rate_plan_id=plan.id, rate_plan_code=plan.code, rate_plan_name=plan.name,
                negotiated=plan.negotiated, bookable=quote.bookable,
                available=quote.available or 0, currency=quote.currency, nights=quote.nights,
                room_total=quote.room_total, packages_total=quote.packages_total,
                discount_total=quote.discount_total, total=quote.total, reasons=quote.reasons))
        offers.sort(key=lambda o: (not o.bookable, o.total, o.rate_plan_code))
        if offers or body.include_unavailable:
            out_types.append(s.RoomTypeAvailabilityOut(
                room_type_id=rt.id, code=rt.code, name=rt.name, max_occupancy=rt.max_occupancy,
                available=max(available, 0), offers=offers))
    return s.AvailabilityOut(
        property_id=prop.id, property_code=prop.code, arrival_date=arrival,
        departure_date=departure, nights=len(nights), adults=body.adults,
        children=body.children, company_profile_id=company_id, room_types=out_types)


# -- the seeded hotel ----------------------------------------------------------------------------

def _night(i: int) -> date:
    return ARR + timedelta(days=i)


@pytest.fixture
def hotel(ctx):
    prop = make_property(ctx)
    types = [make_room_type(ctx, prop.id, code=f"T{i}", max_occupancy=2 + i % 2,
                            sort_order=0 if i == 3 else 1) for i in range(5)]
    rooms = {rt.id: [make_room(ctx, prop.id, rt.id) for _ in range(1 + i % 3)]
             for i, rt in enumerate(types)}
    bkf = make_package(ctx, prop.id, code="BKF", price="12.50", calculation="PER_PERSON_PER_NIGHT")
    make_package(ctx, prop.id, code="PARK", price="9.99", calculation="PER_NIGHT")
    make_package(ctx, prop.id, code="WELCOME", price="20", calculation="PER_STAY")
    make_package(ctx, prop.id, code="SPA", price="31.33", calculation="PER_PERSON")
    make_package(ctx, prop.id, code="USD", price="5", calculation="PER_STAY", currency="USD")
    plans = [
        make_rate_plan(ctx, prop.id, code="BAR", name="Best"),
        make_rate_plan(ctx, prop.id, code="BB", name="Bed and breakfast",
                       package_codes=[bkf.code, "PARK", "WELCOME", "SPA"]),
        make_rate_plan(ctx, prop.id, code="NR", name="Non refundable"),
        make_rate_plan(ctx, prop.id, code="OLD", name="Old", active=False),
        make_rate_plan(ctx, prop.id, code="US", name="Dollars", currency="USD",
                       package_codes=["USD", "BKF"]),
        make_rate_plan(ctx, prop.id, code="CORP1", name="Corp 1", negotiated=True),
        make_rate_plan(ctx, prop.id, code="CORP2", name="Corp 2", negotiated=True),
    ]
    by_code = {p.code: p for p in plans}
    with unit_of_work(ctx) as uow:
        rate_rows = []
        for pi, plan in enumerate(plans):
            for ti, rt in enumerate(types):
                for d in range(DAYS):
                    if (pi + ti + d) % 17 == 0:
                        continue  # a night without a rate
                    amount = Decimal(90 + 10 * pi + ti) + Decimal(d % 3) / Decimal(8)
                    rate_rows.append({"id": uuid.uuid4(), "property": prop.id, "rate_plan": plan.id,
                                      "room_type": rt.id, "date": _night(d), "amount": amount,
                                      "currency": plan.currency})
        RateSchedule.insert_many(rate_rows).execute()
        for plan in plans:  # a rate writer moves its plan's version (pms.db.versioned)
            uow.emit("hotel:pms:rate_schedule:updated", plan, {})
        inv = []
        for ti, rt in enumerate(types):
            for d in range(0, DAYS, 2):
                sell_limit = (None, 0, -1, 1, 7)[(ti + d) % 5]
                sold = (0, 1, 2, 5)[(ti * d) % 4]
                # The stored snapshot is what it was when those rooms were sold: a type sold
                # above its rooms today lost rooms since (the search recounts them), so the
                # run-wide invariant (sold never above the stored physical) still holds.
                physical = max(len(rooms[rt.id]), sold)
                # rooms held by room blocks (some nights over what is left)
                held = (0, 1, 0, 2, 3, 0, 1)[(ti + 2 * d) % 7]
                inv.append({"id": uuid.uuid4(), "property": prop.id, "room_type": rt.id,
                            "date": _night(d), "sell_limit": sell_limit, "sold": sold,
                            "physical": physical, "held": held})
        InventoryDay.insert_many(inv).execute()
        for ti, rt in enumerate(types):
            first = rooms[rt.id][0]
            Maintenance.insert_many([
                {"id": uuid.uuid4(), "property": prop.id, "room": first.id, "kind": "OUT_OF_ORDER",
                 "from_date": _night(ti), "to_date": _night(ti + 3), "active": True},
                {"id": uuid.uuid4(), "property": prop.id, "room": first.id,
                 "kind": "OUT_OF_SERVICE", "from_date": _night(ti + 2), "to_date": _night(ti + 6),
                 "active": True},
                {"id": uuid.uuid4(), "property": prop.id, "room": rooms[rt.id][-1].id,
                 "kind": "OUT_OF_SERVICE", "from_date": _night(8), "to_date": _night(9),
                 "active": ti % 2 == 0},
                {"id": uuid.uuid4(), "property": prop.id, "room": first.id, "kind": "OUT_OF_ORDER",
                 "from_date": ARR - timedelta(days=5), "to_date": _night(0), "active": True},
            ]).execute()
        rules = [
            (None, None, 4, {"closed": True}),
            (by_code["BAR"].id, None, 6, {"closed_to_arrival": True, "min_los": 3}),
            (None, types[1].id, 6, {"min_los": 2, "max_los": 4}),
            (by_code["NR"].id, types[2].id, 9, {"closed_to_departure": True}),
            (by_code["BB"].id, None, 10, {"max_los": 5}),
            (None, None, 10, {"min_los": 1}),
            (by_code["CORP1"].id, None, 3, {"closed": True}),
            (None, None, 12, {}),  # all open: ignored
        ]
        open_ = {"closed": False, "closed_to_arrival": False, "closed_to_departure": False,
                 "min_los": None, "max_los": None}  # every row names every column
        Restriction.insert_many([
            {"id": uuid.uuid4(), "property": prop.id, "rate_plan": plan_id, "room_type": rt_id,
             "date": _night(d), **open_, **flags} for plan_id, rt_id, d, flags in rules]).execute()
        for code, kind, value, extra in (
                ("TENOFF", "PERCENT", "10", {}),
                ("FIVE", "FIXED", "5", {"currency": "EUR"}),
                ("LONG", "PERCENT", "15", {"min_nights": 5}),
                ("LATE", "FIXED", "7", {"valid_from": _night(30)}),
                ("ONLYNR", "PERCENT", "50", {"rate_plan_ids": [str(by_code["NR"].id)]}),
                ("OFF", "PERCENT", "5", {"active": False})):
            PromoCode.create(property=prop.id, code=code, discount_type=kind,
                             discount_value=Decimal(value), **extra)
        company = Profile.create(kind="COMPANY", company_name="Acme", preferences={
            "negotiated_rate_plan_ids": [str(by_code["CORP1"].id), "bad",
                                         str(by_code["CORP2"].id)]})
    return prop, types, by_code, company


def _body(model, **over):
    body = {"arrival_date": str(ARR), "departure_date": str(_night(7)), "adults": 2}
    body.update(over)
    return msgspec.convert(body, model)


CASES = [
    {},
    {"departure_date": str(_night(1))},
    {"arrival_date": str(_night(2)), "departure_date": str(_night(12))},
    {"arrival_date": str(_night(6)), "departure_date": str(_night(9))},
    {"arrival_date": str(_night(6)), "departure_date": str(_night(10)), "adults": 3},
    {"arrival_date": str(_night(6)), "departure_date": str(_night(7))},
    {"arrival_date": str(_night(6)), "departure_date": str(_night(14))},
    {"arrival_date": str(_night(10)), "departure_date": str(_night(17))},
    {"departure_date": str(_night(25))},  # past the loaded rates and inventory
    {"adults": 1, "children": 2},
    {"include_unavailable": False},
    {"include_unavailable": False, "arrival_date": str(_night(10)),
     "departure_date": str(_night(13))},
    {"promo_code": "tenoff"},
    {"promo_code": "FIVE", "arrival_date": str(_night(10)), "departure_date": str(_night(12))},
    {"promo_code": "LONG"},
    {"promo_code": "LONG", "departure_date": str(_night(3))},
    {"promo_code": "LATE"},
    {"promo_code": "ONLYNR"},
    {"promo_code": "OFF"},
    {"promo_code": "NOSUCH"},
]


@pytest.mark.parametrize("over", CASES, ids=[str(i) for i in range(len(CASES))])
def test_search_answers_what_the_row_per_night_search_answered(ctx, hotel, over):
    prop = hotel[0]
    body = _body(AvailabilityIn, **over)
    new = msgspec.json.encode(availability.search_property(ctx, prop.id, body))
    old = msgspec.json.encode(_old_search(ctx, prop.id, body))
    assert new == old
    new_again = msgspec.json.encode(availability.search_property(ctx, prop.id, body))
    assert new_again == old  # the second search runs on the cached catalog


def test_search_filters_answer_what_they_answered(ctx, hotel):
    prop, types, plans, _ = hotel
    for over in ({"room_type_id": str(types[3].id)},
                 {"rate_plan_ids": [str(plans["NR"].id), str(plans["US"].id),
                                    str(plans["OLD"].id)]},
                 {"rate_plan_ids": [str(plans["CORP1"].id)]},
                 {"room_type_id": str(types[1].id), "rate_plan_ids": [str(plans["BB"].id)],
                  "promo_code": "TENOFF", "children": 1}):
        body = _body(AvailabilityIn, **over)
        new = msgspec.json.encode(availability.search_property(ctx, prop.id, body))
        assert new == msgspec.json.encode(_old_search(ctx, prop.id, body)), over


def test_corporate_search_answers_what_it_answered(ctx, hotel):
    prop, _, plans, company = hotel
    for over in ({}, {"rate_plan_ids": [str(plans["CORP2"].id)]}, {"promo_code": "TENOFF"}):
        body = _body(CorporateAvailabilityIn, company_profile_id=str(company.id), **over)
        new = msgspec.json.encode(availability.search_corporate(ctx, prop.id, body))
        old = msgspec.json.encode(_old_search(
            ctx, prop.id, body, negotiated_ids=[plans["CORP1"].id, plans["CORP2"].id],
            company_id=company.id))
        assert new == old, over


def test_the_seeded_hotel_exercises_every_reason(ctx, hotel):
    """Guards the comparisons above: the cases meet every reason and both kinds of offer."""
    prop = hotel[0]
    seen, bookable, available = set(), set(), set()
    for over in CASES:
        out = availability.search_property(ctx, prop.id, _body(AvailabilityIn, **over))
        for rt in out.room_types:
            available.add(rt.available)
            for offer in rt.offers:
                bookable.add(offer.bookable)
                seen.update(r.code for r in offer.reasons)
    assert {"closed", "no_rate", "sold_out", "closed_to_arrival", "closed_to_departure",
            "min_los", "max_los", "over_occupancy", "package_currency_mismatch", "promo_invalid",
            "promo_not_yet_valid", "promo_min_nights", "promo_not_applicable"} <= seen, seen
    assert bookable == {True, False} and len(available) >= 2, (bookable, available)
