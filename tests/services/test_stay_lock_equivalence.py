"""The front desk's locked reads at database speed answer what their references answer, on
PostgreSQL, on randomized stays (check-in and check-out start with them: SPEC rule 5's writes
decide on what they return).

- the stay and its business date: `pms.services.reservations.stays.lock_stay.postgres` (one
  statement: the reservation of the property, a guest session's own only, with its property's
  timezone and business date) against `lock_stay.reference` (`load_reservation(lock=True)`,
  `load_property`): the same NotFound, or the same row (every column) and business date, for
  reservations of two properties (one on its local calendar date, one in another time zone on
  an audited business date days behind) and of another env, asked through either property or none, by the desk or by a guest
  session of the stay's own guest or of another;
- the room: `pms.services.reservations.room_holds.lock_room.postgres` against its reference
  (`for_update` of the model): the same room (every column) or None.

The seeds are fixed, so a failure is reproducible; each assertion names its case.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from datetime import timedelta
from typing import Any

import pytest

from pms.context import Ctx
from pms.db.uow import unit_of_work
from pms.errors import NotFound
from pms.models import Property, Reservation, Room
from pms.services.reservations import room_holds, stays
from tests.factories import make_booking_hotel, make_profile, make_reservation

pytestmark = [pytest.mark.postgres]


def _stay_answer(ctx: Ctx, lock: Any, property_id: uuid.UUID, reservation_id: uuid.UUID) -> Any:
    with unit_of_work(ctx):
        try:
            row, today = lock(ctx, property_id, reservation_id)
        except NotFound:
            return "not found"
        return dict(row.__data__), today


def test_the_stay_lock_reads_what_the_models_read(ctx, pg_db):
    rnd = random.Random(5001)
    berlin = make_booking_hotel(ctx, rooms=3)
    tokyo = make_booking_hotel(ctx, rooms=3, timezone="Asia/Tokyo")
    with unit_of_work(ctx):  # an audited business date, behind the calendar's
        Property.update(business_date=berlin.today - timedelta(days=3)).where(
            Property.id == tokyo.id).execute()
    mine = [make_reservation(ctx, hotel) for hotel in (berlin, tokyo) for _ in range(3)]
    other_env = Ctx(env_id=uuid.uuid4(), now=ctx.now)
    theirs = make_reservation(other_env, make_booking_hotel(other_env, rooms=1))
    stays_made = [*mine, theirs]
    guests = [make_profile(ctx, berlin.id).id for _ in mine]
    with unit_of_work(ctx):  # each stay its own guest (a guest session's holder)
        for stay, guest in zip(mine, guests, strict=True):
            Reservation.update(guest_profile=guest).where(Reservation.id == stay.id).execute()
    seen = {"found": 0, "not found": 0, "guest's own": 0, "dates": set()}
    for case in range(120):
        stay = rnd.choice([*stays_made, None])
        reservation_id = stay.id if stay is not None else uuid.uuid4()
        own = stay.property_id if stay is not None else berlin.id
        property_id = rnd.choice([own, own, own, berlin.id, tokyo.id, uuid.uuid4()])
        own_guest = guests[mine.index(stay)] if stay in mine else uuid.uuid4()
        holder = rnd.choice([None, None, None, own_guest, own_guest, rnd.choice(guests),
                             uuid.uuid4()])
        asking = dataclasses.replace(ctx, holder_id=holder)
        fast = _stay_answer(asking, stays.lock_stay.postgres, property_id, reservation_id)
        reference = _stay_answer(asking, stays.lock_stay.reference, property_id, reservation_id)
        assert fast == reference, f"case {case}: {reservation_id} at {property_id}, {holder}"
        if fast == "not found":
            seen["not found"] += 1
            continue
        seen["found"] += 1
        seen["dates"].add(fast[1])
        assert fast[0]["env_id"] == ctx.env_id
        seen["guest's own"] += holder is not None
    # the control: both answers, a guest finding its own stay, and both properties' dates
    assert seen["found"] > 25 and seen["not found"] > 30 and seen["guest's own"] > 10, seen
    assert len(seen["dates"]) == 2, seen


def test_the_room_lock_reads_what_the_models_read(ctx, pg_db):
    rnd = random.Random(5002)
    hotel = make_booking_hotel(ctx, rooms=4)
    other_env = Ctx(env_id=uuid.uuid4(), now=ctx.now)
    theirs = make_booking_hotel(other_env, rooms=1).rooms[0]
    with unit_of_work(ctx):
        for room in hotel.rooms:
            Room.update(status=rnd.choice(["VACANT", "OCCUPIED"]),
                        hk_status=rnd.choice(["CLEAN", "DIRTY", "OUT_OF_ORDER"])).where(
                Room.id == room.id).execute()
    found = 0
    for case in range(30):
        room_id = rnd.choice([*(r.id for r in hotel.rooms), theirs.id, uuid.uuid4()])
        answers = []
        for lock in (room_holds.lock_room.postgres, room_holds.lock_room.reference):
            with unit_of_work(ctx):
                room = lock(room_id)
                answers.append(None if room is None else dict(room.__data__))
        assert answers[0] == answers[1], f"case {case}: {room_id}"
        found += answers[0] is not None
    assert 10 < found < 30  # the control: rooms found and rooms not the env's


def test_control_a_stay_read_without_the_holder_filter_differs(ctx, pg_db):
    """The comparison sees a dropped rule: a guest session reading another guest's stay."""
    hotel = make_booking_hotel(ctx, rooms=1)
    stay = make_reservation(ctx, hotel)
    guest = make_profile(ctx, hotel.id).id
    with unit_of_work(ctx):
        Reservation.update(guest_profile=guest).where(Reservation.id == stay.id).execute()
    assert _stay_answer(dataclasses.replace(ctx, holder_id=guest), stays.lock_stay.postgres,
                        hotel.id, stay.id) != "not found"
    stranger = dataclasses.replace(ctx, holder_id=uuid.uuid4())
    unfiltered = _stay_answer(dataclasses.replace(ctx, holder_id=None),
                              stays.lock_stay.postgres, hotel.id, stay.id)
    assert unfiltered != "not found"
    assert _stay_answer(stranger, stays.lock_stay.postgres, hotel.id, stay.id) == "not found"
    assert _stay_answer(stranger, stays.lock_stay.reference, hotel.id, stay.id) == "not found"
