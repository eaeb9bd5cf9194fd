"""restriction parity with the channels, as a case table (written for pms in the style
of the open-source PMS restriction suites: one row = restrictions, a stay, the verdict). Each
row runs through the search, the booking and the ARI event of the restriction write, on both
backends. D0 is the hotel's business date; a stay is (arrival offset, nights)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import msgspec
import pytest

from pms.errors import ValidationFailed
from pms.schemas.availability import AvailabilityIn
from pms.schemas.rates import RestrictionIn
from pms.services.distribution.ari_events import ARI_UPDATED
from pms.services.inventory import availability
from pms.services.rates import rates
from tests.factories import make_booking_hotel, make_reservation
from tests.services.test_ari_events import ari_rows

pytestmark = pytest.mark.usefixtures("database")

# (name, [(day offset, plan-specific?, fields)], (arrival offset, nights), reasons expected)
CASES: list[tuple[str, list[tuple[int, bool, dict[str, Any]]], tuple[int, int], set[str]]] = [
    ("open", [], (0, 2), set()),
    ("min arrival refuses a short stay", [(0, True, {"min_stay_arrival": 3})], (0, 2),
     {"min_los"}),
    ("min arrival accepts the length", [(0, True, {"min_stay_arrival": 3})], (0, 3), set()),
    ("min arrival on a later night is not the arrival's", [(1, True, {"min_stay_arrival": 3})],
     (0, 2), set()),
    ("today's name min_los still works", [(0, True, {"min_los": 2})], (0, 1), {"min_los"}),
    ("max arrival refuses a long stay", [(0, True, {"max_stay_arrival": 2})], (0, 3),
     {"max_los"}),
    ("min through on a middle night refuses", [(1, True, {"min_stay_through": 3})], (0, 2),
     {"min_stay_through"}),
    ("min through on a middle night accepts the length",
     [(1, True, {"min_stay_through": 3})], (0, 3), set()),
    ("min through on the departure date is no night of the stay",
     [(2, True, {"min_stay_through": 3})], (0, 2), set()),
    ("min through on the arrival night", [(0, True, {"min_stay_through": 2})], (0, 1),
     {"min_stay_through"}),
    ("max through on a middle night refuses", [(1, True, {"max_stay_through": 2})], (0, 3),
     {"max_stay_through"}),
    ("max through accepts a stay within", [(1, True, {"max_stay_through": 2})], (0, 2), set()),
    ("through rules of two nights: the strictest", [(0, True, {"min_stay_through": 2}),
                                                   (1, True, {"min_stay_through": 3})],
     (0, 2), {"min_stay_through"}),
    ("every plan's through rule and the plan's: the larger minimum",
     [(1, False, {"min_stay_through": 4}), (1, True, {"min_stay_through": 2})], (0, 3),
     {"min_stay_through"}),
    ("an arrival rule and a through rule together", [(0, True, {"min_stay_arrival": 2,
                                                                "max_stay_through": 1})],
     (0, 2), {"max_stay_through"}),
    ("closed to arrival", [(0, True, {"closed_to_arrival": True})], (0, 2),
     {"closed_to_arrival"}),
    ("closed to departure", [(2, True, {"closed_to_departure": True})], (0, 2),
     {"closed_to_departure"}),
    ("closed to departure on a night stayed through is fine",
     [(1, True, {"closed_to_departure": True})], (0, 2), set()),
    ("closed", [(1, True, {"closed": True})], (0, 3), {"closed"}),
    ("a stay arriving after the through night is free", [(0, True, {"min_stay_through": 5})],
     (1, 1), set()),
]


def _restrict(ctx, hotel, day_offset, plan_specific, fields):
    day = (hotel.today + timedelta(days=day_offset)).isoformat()
    body = msgspec.convert({"from_date": day, "to_date": day, **fields}, RestrictionIn)
    rates.set_restrictions(ctx, hotel.id, hotel.rate_plan.id if plan_specific else None, body)


def _search_reasons(ctx, hotel, arrival, departure) -> tuple[bool, set[str]]:
    out = availability.search_property(ctx, hotel.id, msgspec.convert(
        {"arrival_date": arrival.isoformat(), "departure_date": departure.isoformat(),
         "adults": 1, "rate_plan_ids": [str(hotel.rate_plan.id)]}, AvailabilityIn))
    (rt,) = out.room_types
    (offer,) = rt.offers
    return offer.bookable, {r.code for r in offer.reasons}


def _booking_reasons(ctx, hotel, arrival, departure) -> set[str]:
    try:
        make_reservation(ctx, hotel, arrival_date=arrival.isoformat(),
                         departure_date=departure.isoformat())
    except ValidationFailed as exc:
        assert exc.code == "stay_not_bookable"
        return {r["code"] for r in exc.extra["reasons"]}
    return set()


@pytest.mark.parametrize(("name", "rules", "stay", "expected"), CASES,
                         ids=[c[0].replace(" ", "_") for c in CASES])
def test_restriction_case(ctx, name, rules, stay, expected):
    hotel = make_booking_hotel(ctx, rooms=2)
    for day_offset, plan_specific, fields in rules:
        _restrict(ctx, hotel, day_offset, plan_specific, fields)
    arrival = hotel.today + timedelta(days=stay[0])
    departure = arrival + timedelta(days=stay[1])
    bookable, reasons = _search_reasons(ctx, hotel, arrival, departure)
    assert (bookable, reasons) == (not expected, expected), name
    assert _booking_reasons(ctx, hotel, arrival, departure) == expected, name


def test_the_booking_sees_a_through_rule_written_after_an_earlier_booking(ctx):
    """The booking's fast path keeps "no through rule" per plan and property version: the
    restriction write moves the version, so the next booking reads the rule."""
    hotel = make_booking_hotel(ctx, rooms=3)
    make_reservation(ctx, hotel)  # (nothing through-stay yet: remembered)
    _restrict(ctx, hotel, 1, True, {"min_stay_through": 3})
    assert _booking_reasons(ctx, hotel, hotel.today, hotel.today + timedelta(days=2)) == {
        "min_stay_through"}
    _restrict(ctx, hotel, 1, False, {"max_stay_through": 1})  # every plan: the property's
    assert _booking_reasons(ctx, hotel, hotel.today, hotel.today + timedelta(days=3)) == {
        "max_stay_through"}


def test_restrictions_read_back_in_both_names_and_travel_in_the_ari_event(ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    _restrict(ctx, hotel, 0, True, {"min_stay_arrival": 2, "max_stay_arrival": 5,
                                    "min_stay_through": 2, "max_stay_through": 7})
    out = rates.list_restrictions(ctx, hotel.id, hotel.rate_plan.id, msgspec.convert(
        {"from_date": hotel.today.isoformat(), "to_date": hotel.today.isoformat()},
        rates.s.RestrictionQuery))
    (row,) = out.data
    assert (row.min_los, row.max_los, row.min_stay_arrival, row.max_stay_arrival,
            row.min_stay_through, row.max_stay_through) == (2, 5, 2, 5, 2, 7)
    (last, *_) = sorted((e for e in ari_rows(ctx) if e["type"] == ARI_UPDATED),
                        key=lambda e: -e["aggregateversion"])
    (night,) = last["data"]["nights"]
    assert night["restrictions"][str(hotel.rate_plan.id)] == {
        "closed": False, "closed_to_arrival": False, "closed_to_departure": False,
        "min_stay_arrival": 2, "max_stay_arrival": 5, "min_stay_through": 2,
        "max_stay_through": 7}


def test_both_names_must_agree_and_through_minimum_not_above_maximum(ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    with pytest.raises(ValidationFailed):
        _restrict(ctx, hotel, 0, True, {"min_los": 2, "min_stay_arrival": 3})
    with pytest.raises(ValidationFailed):
        _restrict(ctx, hotel, 0, True, {"min_stay_through": 4, "max_stay_through": 3})
    _restrict(ctx, hotel, 0, True, {"min_los": 2, "min_stay_arrival": 2})  # the same: fine


# Allotments per rate plan, in the same style: (name, [(day offset, allotment)],
# [(arrival offset, nights, cancelled?, on another plan?)] booked first, the stay, reasons). The
# search's reason is `allotment_exhausted` (the offer is left out when unavailable ones are),
# the booking's a 409 of that code naming the nights.
ALLOTMENT_CASES: list[tuple[str, list[tuple[int, int]], list[tuple[int, int, bool, bool]],
                            tuple[int, int], set[str]]] = [
    ("an allotment with rooms left", [(0, 1), (1, 1)], [], (0, 2), set()),
    ("an allotment of zero closes the plan that night", [(1, 0)], [], (0, 2),
     {"allotment_exhausted"}),
    ("used up on the arrival night", [(0, 1)], [(0, 1, False, False)], (0, 2),
     {"allotment_exhausted"}),
    ("used up on a middle night", [(1, 1)], [(1, 1, False, False)], (0, 3),
     {"allotment_exhausted"}),
    ("the departure date is no night of the stay", [(2, 0)], [], (0, 2), set()),
    ("two of two sold is used up", [(0, 2)], [(0, 1, False, False), (0, 2, False, False)],
     (0, 1), {"allotment_exhausted"}),
    ("one of two sold leaves one", [(0, 2)], [(0, 1, False, False)], (0, 1), set()),
    ("a cancelled booking gives it back", [(0, 1)], [(0, 1, True, False)], (0, 1), set()),
    ("another plan's bookings are not this plan's", [(0, 1)], [(0, 1, False, True)], (0, 1),
     set()),
    ("a stay after the used-up night is free", [(0, 1)], [(0, 1, False, False)], (1, 2), set()),
]


@pytest.mark.parametrize(("name", "allotted", "booked", "stay", "expected"), ALLOTMENT_CASES,
                         ids=[c[0].replace(" ", "_") for c in ALLOTMENT_CASES])
def test_allotment_case(ctx, name, allotted, booked, stay, expected):
    from pms.errors import AllotmentExhausted
    from pms.services.reservations import reservations
    from tests.factories import load_rates, make_rate_plan
    from tests.services.test_allotments import allot

    hotel = make_booking_hotel(ctx, rooms=4)
    other = make_rate_plan(ctx, hotel.id)
    load_rates(ctx, hotel.id, other.id, hotel.room_type.id)
    for day_offset, n in allotted:
        allot(ctx, hotel, day_offset, day_offset, n)
    for arrival_offset, nights, cancelled, elsewhere in booked:
        row = make_reservation(
            ctx, hotel, arrival_date=(hotel.today + timedelta(days=arrival_offset)).isoformat(),
            departure_date=(hotel.today + timedelta(days=arrival_offset + nights)).isoformat(),
            rate_plan_id=str((other if elsewhere else hotel.rate_plan).id))
        if cancelled:
            reservations.cancel_reservation(ctx, hotel.id, row.id)
    arrival = hotel.today + timedelta(days=stay[0])
    departure = arrival + timedelta(days=stay[1])
    bookable, reasons = _search_reasons(ctx, hotel, arrival, departure)
    assert (bookable, reasons) == (not expected, expected), name
    try:
        make_reservation(ctx, hotel, arrival_date=arrival.isoformat(),
                         departure_date=departure.isoformat())
        refused: set[str] = set()
    except AllotmentExhausted as exc:
        refused = {exc.code}
        assert exc.extra["nights"], name
    assert refused == expected, name
