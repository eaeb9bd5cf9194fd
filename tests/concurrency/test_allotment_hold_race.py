"""Allotments with a release period under parallel requests on PostgreSQL: the rooms a
channel's allotment holds are counted under the booking's night locks (in `pms_take_nights`,
after the lock statement, and in the reference path after `lock_days`), so walk-ins racing the
channel's own bookings sell exactly the house's rooms and the channel its allotment, and a
walk-in racing a channel booking's cancel never takes the room the cancel gives back to the
hold. The control counts the holds BEFORE the locks (TEST-ONLY
`inventory.HOLD_HOOKS.holds_before_lock`) and lets a walk-in take it, which shows the test can
fail. Threads (each with its own pooled connection) start on a barrier."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import msgspec
import pytest

from pms.db.database import db
from pms.db.uow import read_scope
from pms.errors import AllotmentExhausted, RoomTypeUnavailable
from pms.models import Reservation
from pms.schemas.inventory import AllotmentIn
from pms.services.inventory import allotments, inventory
from pms.services.reservations import reservations
from tests.factories import load_rates, make_booking_hotel, make_rate_plan, make_reservation

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

NIGHT = 5  # days after today: held (released 2 days before the night)


def _hotel(ctx, rooms: int, allotment: int):
    hotel = make_booking_hotel(ctx, rooms=rooms)
    hotel.ota = make_rate_plan(ctx, hotel.id)
    load_rates(ctx, hotel.id, hotel.ota.id, hotel.room_type.id)
    day = hotel.today + timedelta(days=NIGHT)
    allotments.set_allotments(ctx, hotel.id, hotel.ota.id, msgspec.convert(
        {"room_type_id": str(hotel.room_type.id), "from_date": day.isoformat(),
         "to_date": day.isoformat(), "allotment": allotment, "release_days": 2}, AllotmentIn))
    return hotel


def _book(ctx, hotel, plan=None):
    day = hotel.today + timedelta(days=NIGHT)
    over = {"arrival_date": day.isoformat(),
            "departure_date": (day + timedelta(days=1)).isoformat()}
    if plan is not None:
        over["rate_plan_id"] = str(plan.id)
    return make_reservation(ctx, hotel, **over)


def _live(ctx, hotel, plan) -> int:
    with read_scope(ctx):
        return (Reservation.select().where((Reservation.rate_plan == plan.id)
                                           & (Reservation.status == "CONFIRMED")).count())


def _attempt(ctx, hotel, plan=None) -> str:
    try:
        _book(ctx, hotel, plan)
        return "sold"
    except (RoomTypeUnavailable, AllotmentExhausted):
        return "refused"
    finally:
        db.close()


def test_walk_ins_racing_the_channels_bookings_sell_the_house_and_the_channel_its_hold(
        ctx, pg_db):
    hotel = _hotel(ctx, rooms=4, allotment=2)
    barrier = threading.Barrier(9, timeout=120)

    def go(plan):
        barrier.wait(timeout=60)
        return _attempt(ctx, hotel, plan)

    allotments.TEST_HOOKS.pause_after_check = lambda: time.sleep(0.03)
    try:
        with ThreadPoolExecutor(max_workers=9) as pool:
            walk = [pool.submit(go, None) for _ in range(6)]
            ota = [pool.submit(go, hotel.ota) for _ in range(3)]
            walk_results = [f.result() for f in walk]
            ota_results = [f.result() for f in ota]
    finally:
        allotments.TEST_HOOKS.pause_after_check = None
    assert walk_results.count("sold") == 2, walk_results  # 4 rooms, 2 held for the channel
    assert ota_results.count("sold") == 2, ota_results
    assert _live(ctx, hotel, hotel.rate_plan) == 2 and _live(ctx, hotel, hotel.ota) == 2


def _walk_ins_during_a_channel_cancel(ctx, *, before_lock: bool) -> list[str]:
    """The house is full and the channel sold its one allotted room; its cancel (night locks
    held, paused) gives the room back to the hold while three walk-ins try to book."""
    hotel = _hotel(ctx, rooms=3, allotment=1)
    sold = _book(ctx, hotel, hotel.ota)
    _book(ctx, hotel)
    _book(ctx, hotel)
    errors: list[BaseException] = []

    def pause():
        if threading.current_thread().name == "cancel":
            time.sleep(2.0)  # long enough for the walk-ins to count and queue

    def cancel():
        try:
            reservations.cancel_reservation(ctx, hotel.id, sold.id)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            db.close()

    allotments.TEST_HOOKS.pause_after_check = pause
    inventory.HOLD_HOOKS.holds_before_lock = before_lock
    try:
        thread = threading.Thread(target=cancel, name="cancel")
        thread.start()
        time.sleep(0.3)  # the cancel holds the nights' locks
        with ThreadPoolExecutor(max_workers=3) as pool:
            results = [f.result() for f in [pool.submit(_attempt, ctx, hotel) for _ in range(3)]]
        thread.join(30)
    finally:
        allotments.TEST_HOOKS.pause_after_check = None
        inventory.HOLD_HOOKS.holds_before_lock = False
    assert errors == []
    return results


def test_a_walk_in_never_takes_the_room_a_channel_cancel_gives_back_to_its_hold(ctx, pg_db):
    assert _walk_ins_during_a_channel_cancel(ctx, before_lock=False).count("sold") == 0


def test_control_counting_the_holds_before_the_locks_sells_the_held_room(ctx, pg_db):
    assert _walk_ins_during_a_channel_cancel(ctx, before_lock=True).count("sold") >= 1
