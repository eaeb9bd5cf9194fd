"""allotments per rate plan (as channel managers know them, distinct from the room
type's sell limit): the search leaves a plan out on a night its allotment is used up, the booking
is refused (409 allotment_exhausted naming the nights), cancels, no-shows, edits and early
check-outs give rooms back, and the ARI events carry every plan's rooms left (both backends; the
race under the night locks: tests/concurrency/test_allotment_race.py; the digest:
tests/api/test_ari_api.py)."""

from __future__ import annotations

from datetime import timedelta

import msgspec
import pytest

from pms.errors import AllotmentExhausted, NotFound, ValidationFailed
from pms.schemas.availability import AvailabilityIn
from pms.schemas.inventory import AllotmentIn, AllotmentQuery
from pms.schemas.reservations import ReservationPatch
from pms.services.inventory import allotments, availability
from pms.services.reservations import reservations, stays
from tests.factories import load_rates, make_booking_hotel, make_rate_plan, make_reservation
from tests.services.test_ari_events import Projection, ari_rows

pytestmark = pytest.mark.usefixtures("database")


def allot(ctx, hotel, first: int, last: int, n: int | None, *, plan=None):
    body = msgspec.convert({"room_type_id": str(hotel.room_type.id),
                            "from_date": (hotel.today + timedelta(days=first)).isoformat(),
                            "to_date": (hotel.today + timedelta(days=last)).isoformat(),
                            "allotment": n}, AllotmentIn)
    return allotments.set_allotments(ctx, hotel.id, (plan or hotel.rate_plan).id, body)


def left(ctx, hotel, first: int, last: int, *, plan=None) -> dict[int, int]:
    out = allotments.list_allotments(ctx, hotel.id, (plan or hotel.rate_plan).id,
                                     msgspec.convert({
                                         "from_date": (hotel.today + timedelta(days=first)).isoformat(),
                                         "to_date": (hotel.today + timedelta(days=last)).isoformat()},
                                         AllotmentQuery))
    return {(n.date - hotel.today).days: n.left for n in out.data}


def offer(ctx, hotel, arrival: int, nights: int, plan=None):
    out = availability.search_property(ctx, hotel.id, msgspec.convert(
        {"arrival_date": (hotel.today + timedelta(days=arrival)).isoformat(),
         "departure_date": (hotel.today + timedelta(days=arrival + nights)).isoformat(),
         "adults": 1, "rate_plan_ids": [str((plan or hotel.rate_plan).id)]}, AvailabilityIn))
    (rt,) = out.room_types
    (found,) = rt.offers
    return rt, found


def book(ctx, hotel, arrival: int, nights: int, plan=None):
    return make_reservation(
        ctx, hotel, arrival_date=(hotel.today + timedelta(days=arrival)).isoformat(),
        departure_date=(hotel.today + timedelta(days=arrival + nights)).isoformat(),
        rate_plan_id=str((plan or hotel.rate_plan).id))


def test_search_and_booking_keep_to_the_allotment_and_a_cancel_gives_it_back(ctx):
    hotel = make_booking_hotel(ctx, rooms=4)
    other = make_rate_plan(ctx, hotel.id)
    load_rates(ctx, hotel.id, other.id, hotel.room_type.id)
    allot(ctx, hotel, 0, 2, 1)
    assert left(ctx, hotel, 0, 2) == {0: 1, 1: 1, 2: 1}
    first = book(ctx, hotel, 0, 2)
    assert left(ctx, hotel, 0, 3) == {0: 0, 1: 0, 2: 1}
    _rt, found = offer(ctx, hotel, 1, 2)
    assert not found.bookable
    assert [(r.code, r.date) for r in found.reasons] == [
        ("allotment_exhausted", hotel.today + timedelta(days=1))]
    assert found.available == 0
    with pytest.raises(AllotmentExhausted) as refused:
        book(ctx, hotel, 1, 2)
    assert refused.value.status == 409
    assert refused.value.extra["nights"] == [(hotel.today + timedelta(days=1)).isoformat()]
    # another plan has no allotment: it sells up to the room type's rooms
    rt, found = offer(ctx, hotel, 1, 2, plan=other)
    assert found.bookable and found.available == rt.available == 3
    book(ctx, hotel, 1, 2, plan=other)
    assert left(ctx, hotel, 0, 2) == {0: 0, 1: 0, 2: 1}  # (not the plan's)
    reservations.cancel_reservation(ctx, hotel.id, first.id)
    assert left(ctx, hotel, 0, 2) == {0: 1, 1: 1, 2: 1}
    assert offer(ctx, hotel, 1, 2)[1].bookable
    book(ctx, hotel, 1, 2)
    allot(ctx, hotel, 0, 2, None)  # removed: the plan sells up to the room type again
    assert left(ctx, hotel, 0, 2) == {}
    assert offer(ctx, hotel, 1, 2)[1].bookable


def test_a_no_show_an_edit_and_an_early_check_out_give_rooms_back(ctx):
    hotel = make_booking_hotel(ctx, rooms=4)
    other = make_rate_plan(ctx, hotel.id)
    load_rates(ctx, hotel.id, other.id, hotel.room_type.id)
    allot(ctx, hotel, 0, 3, 1)
    row = book(ctx, hotel, 0, 2)
    stays.no_show(ctx, hotel.id, row.id)
    assert left(ctx, hotel, 0, 1) == {0: 1, 1: 1}
    row = book(ctx, hotel, 1, 2)
    assert left(ctx, hotel, 0, 3) == {0: 1, 1: 0, 2: 0, 3: 1}
    # an edit onto another plan gives the nights back; an edit back takes them again
    reservations.edit_reservation(ctx, hotel.id, row.id, msgspec.convert(
        {"rate_plan_id": str(other.id)}, ReservationPatch))
    assert left(ctx, hotel, 0, 3) == {0: 1, 1: 1, 2: 1, 3: 1}
    blocker = book(ctx, hotel, 2, 1)
    with pytest.raises(AllotmentExhausted) as refused:
        reservations.edit_reservation(ctx, hotel.id, row.id, msgspec.convert(
            {"rate_plan_id": str(hotel.rate_plan.id)}, ReservationPatch))
    assert refused.value.extra["nights"] == [(hotel.today + timedelta(days=2)).isoformat()]
    reservations.cancel_reservation(ctx, hotel.id, blocker.id)
    reservations.edit_reservation(ctx, hotel.id, row.id, msgspec.convert(
        {"rate_plan_id": str(hotel.rate_plan.id),
         "departure_date": (hotel.today + timedelta(days=4)).isoformat()}, ReservationPatch))
    assert left(ctx, hotel, 0, 3) == {0: 1, 1: 0, 2: 0, 3: 0}


def test_the_ari_events_carry_every_plans_rooms_left(ctx):
    hotel = make_booking_hotel(ctx, rooms=3)
    other = make_rate_plan(ctx, hotel.id)
    load_rates(ctx, hotel.id, other.id, hotel.room_type.id)
    consumer = Projection()
    allot(ctx, hotel, 0, 1, 2)
    allot(ctx, hotel, 1, 1, 1, plan=other)
    row = book(ctx, hotel, 0, 2)
    book(ctx, hotel, 1, 1, plan=other)
    reservations.cancel_reservation(ctx, hotel.id, row.id)
    book(ctx, hotel, 0, 1)
    consumer.apply(ari_rows(ctx))
    rt = str(hotel.room_type.id)
    held = {(hotel.today + timedelta(days=i)).isoformat(): consumer.allotments.get(
        (rt, (hotel.today + timedelta(days=i)).isoformat())) for i in range(3)}
    mine, theirs = left(ctx, hotel, 0, 2), left(ctx, hotel, 0, 2, plan=other)
    assert mine == {0: 1, 1: 2} and theirs == {1: 0}
    expected = {}
    for i in range(3):
        night = {str(p.id): per[i] for p, per in ((hotel.rate_plan, mine), (other, theirs))
                 if i in per}
        expected[(hotel.today + timedelta(days=i)).isoformat()] = night or None
    assert held == expected


def test_bad_input_is_refused(ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    other = make_booking_hotel(ctx, rooms=1)
    with pytest.raises(NotFound):
        allot(ctx, hotel, 0, 1, 1, plan=other.rate_plan)
    with pytest.raises(ValidationFailed):
        allotments.set_allotments(ctx, hotel.id, hotel.rate_plan.id, msgspec.convert(
            {"room_type_id": str(other.room_type.id), "from_date": hotel.today.isoformat(),
             "to_date": hotel.today.isoformat(), "allotment": 1}, AllotmentIn))
    with pytest.raises(ValidationFailed):
        allot(ctx, hotel, 0, 400, 1)
