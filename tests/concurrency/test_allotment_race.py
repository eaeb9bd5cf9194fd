"""a rate plan's allotment under parallel bookings on PostgreSQL. The allotment is
counted AFTER the booking's take has locked the nights of the room type
(pms.services.inventory.allotments.check), so parallel bookings of the last allotted room of a
plan sell it once, although the room type has rooms to spare. The control counts BEFORE the
locks (TEST-ONLY `allotments.TEST_HOOKS.check_before_lock`) and must sell past the allotment,
which shows the real test is able to fail. Threads (each with its own pooled connection) start
together on a barrier; a TEST-ONLY pause after the count widens the race window."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from pms.db.database import db
from pms.db.locking import LockTimeout
from pms.db.uow import read_scope, unit_of_work
from pms.domain.stay import stay_nights
from pms.errors import AllotmentExhausted
from pms.models import Reservation
from pms.services.inventory import allotments, inventory
from pms.services.reservations import reservations
from tests.factories import make_booking_hotel, make_reservation
from tests.services.test_allotments import allot, left
from tests.services.test_ari_events import Projection, ari_rows

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

THREADS = 8
LOCKED_PAUSE_S = 0.03  # held under the locks: the last waits about THREADS x this
CONTROL_PAUSE_S = 0.5  # no lock: every booking counts before any commits


def _hotel(ctx, allotment: int):
    hotel = make_booking_hotel(ctx, rooms=THREADS + 2)
    with unit_of_work(ctx):  # the nights' calendar rows exist, as for any loaded hotel
        inventory.ensure_days(hotel.id, hotel.room_type.id,
                              stay_nights(hotel.today, hotel.today + timedelta(days=2)))
    allot(ctx, hotel, 0, 1, allotment)
    return hotel


def _race(ctx, hotel, *, before_lock: bool) -> tuple[int, int, list[BaseException]]:
    barrier = threading.Barrier(THREADS, timeout=120)
    pause = CONTROL_PAUSE_S if before_lock else LOCKED_PAUSE_S

    def book() -> str:
        barrier.wait(timeout=60)
        try:
            make_reservation(ctx, hotel)
            return "sold"
        except AllotmentExhausted:
            return "refused"
        finally:
            db.close()

    allotments.TEST_HOOKS.pause_after_check = lambda: time.sleep(pause)
    allotments.TEST_HOOKS.check_before_lock = before_lock
    try:
        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            futures = [pool.submit(book) for _ in range(THREADS)]
        results, errors = [], []
        for f in futures:
            try:
                results.append(f.result())
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion
                errors.append(exc)
    finally:
        allotments.TEST_HOOKS.pause_after_check = None
        allotments.TEST_HOOKS.check_before_lock = False
    return results.count("sold"), results.count("refused"), errors


def _live(ctx, hotel) -> int:
    with read_scope(ctx):
        return (Reservation.select().where((Reservation.room_type == hotel.room_type.id)
                                           & (Reservation.status == "CONFIRMED")).count())


@pytest.mark.parametrize("allotment", [1, 2])
def test_parallel_bookings_never_sell_past_the_allotment(ctx, pg_db, allotment):
    hotel = _hotel(ctx, allotment)
    sold, refused, errors = _race(ctx, hotel, before_lock=False)
    assert errors == []
    assert (sold, refused) == (allotment, THREADS - allotment)
    assert _live(ctx, hotel) == allotment
    assert left(ctx, hotel, 0, 1) == {0: 0, 1: 0}


def test_control_counting_before_the_locks_sells_past_the_allotment(ctx, pg_db):
    hotel = _hotel(ctx, 1)
    sold, refused, errors = _race(ctx, hotel, before_lock=True)
    assert errors == []
    assert sold > 1, (sold, refused)  # the race is real: the allotment of one sold twice
    assert _live(ctx, hotel) == sold > 1


# -- an allotment write racing a cancel, and a booking that read its plan before the write --------

def _projected_left(ctx, hotel, first: int, last: int) -> dict[int, int | None]:
    """The plan's rooms left per night as an ARI consumer holds them (None: no allotment)."""
    projection = Projection()
    projection.apply(ari_rows(ctx))
    plan, rt = str(hotel.rate_plan.id), str(hotel.room_type.id)
    return {i: projection.allotments.get(
        (rt, (hotel.today + timedelta(days=i)).isoformat()), {}).get(plan)
        for i in range(first, last + 1)}


def _in_thread(name: str, fn, errors: list[BaseException]) -> threading.Thread:
    def run():
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            errors.append(exc)
        finally:
            db.close()

    thread = threading.Thread(target=run, name=name)
    thread.start()
    return thread


def _write_during_a_counted_cancel(ctx, *, without_lock: bool) -> tuple[bool, object]:
    """A cancel counts the plan's rooms left (its night locks held) and pauses; meanwhile the
    allotment is raised from 1 to 2. Returns (whether the write waited for the cancel, hotel)."""
    hotel = _hotel(ctx, 1)
    booked = make_reservation(ctx, hotel)  # nights 0 and 1: none left
    assert left(ctx, hotel, 0, 1) == {0: 0, 1: 0}
    counted, go = threading.Event(), threading.Event()

    def pause():
        if threading.current_thread().name == "cancel":
            counted.set()
            go.wait(30)

    allotments.TEST_HOOKS.pause_after_check = pause
    allotments.TEST_HOOKS.write_without_lock = without_lock
    errors: list[BaseException] = []
    try:
        cancel = _in_thread("cancel", lambda: reservations.cancel_reservation(
            ctx, hotel.id, booked.id), errors)
        assert counted.wait(10)
        write = _in_thread("write", lambda: allot(ctx, hotel, 0, 1, 2), errors)
        # with the night locks the write waits for the cancel's COMMIT (still there after a
        # second); without them it ends while the cancel is paused (however loaded the machine)
        write.join(1.0 if not without_lock else 20)
        waited = write.is_alive()
        go.set()
        cancel.join(30)
        write.join(30)
    finally:
        allotments.TEST_HOOKS.pause_after_check = None
        allotments.TEST_HOOKS.write_without_lock = False
    assert errors == []
    return waited, hotel


def test_an_allotment_write_waits_for_a_cancel_that_counted_and_the_events_follow(ctx, pg_db):
    waited, hotel = _write_during_a_counted_cancel(ctx, without_lock=False)
    assert waited
    assert left(ctx, hotel, 0, 1) == {0: 2, 1: 2}
    assert _projected_left(ctx, hotel, 0, 1) == {0: 2, 1: 2}


def test_control_an_allotment_written_without_the_night_locks_leaves_the_channels_behind(
        ctx, pg_db):
    """The control: the write commits while the cancel holds a count made with the old
    allotment; the cancel's later event tells the channels 1 left where the plan has 2."""
    waited, hotel = _write_during_a_counted_cancel(ctx, without_lock=True)
    assert not waited
    assert left(ctx, hotel, 0, 1) == {0: 2, 1: 2}
    assert _projected_left(ctx, hotel, 0, 1) == {0: 1, 1: 1}


def _booking_across_a_first_allotment(ctx, *, guard: bool) -> tuple[list[BaseException], object]:
    """A booking reads its rate plan (no allotments: the per-process answer is warm at that
    version) and pauses before its night locks; meanwhile the plan's first allotment (1) is
    set on the booking's nights. Returns (the booking's errors, hotel)."""
    hotel = make_booking_hotel(ctx, rooms=3)
    make_reservation(ctx, hotel, arrival_date=str(hotel.today + timedelta(days=5)),
                     departure_date=str(hotel.today + timedelta(days=6)))  # warms the answer
    paused, go = threading.Event(), threading.Event()

    def pause():
        if threading.current_thread().name == "book":
            paused.set()
            go.wait(10)

    allotments.TEST_HOOKS.pause_before_lock = pause
    allotments.TEST_HOOKS.no_guard = not guard
    errors: list[BaseException] = []
    try:
        book = _in_thread("book", lambda: make_reservation(ctx, hotel), errors)
        assert paused.wait(10)
        allot(ctx, hotel, 0, 1, 1)
        go.set()
        book.join(30)
    finally:
        allotments.TEST_HOOKS.pause_before_lock = None
        allotments.TEST_HOOKS.no_guard = False
    return errors, hotel


def test_a_booking_that_read_its_plan_before_a_first_allotment_is_refused_and_retried(
        ctx, pg_db):
    errors, hotel = _booking_across_a_first_allotment(ctx, guard=True)
    assert len(errors) == 1 and isinstance(errors[0], LockTimeout), errors
    assert errors[0].status == 503
    assert _live(ctx, hotel) == 1  # the warm-up booking only
    assert left(ctx, hotel, 0, 1) == {0: 1, 1: 1}
    assert _projected_left(ctx, hotel, 0, 1) == {0: 1, 1: 1}
    make_reservation(ctx, hotel)  # the retry reads the plan again and counts
    assert left(ctx, hotel, 0, 1) == {0: 0, 1: 0}
    assert _projected_left(ctx, hotel, 0, 1) == {0: 0, 1: 0}
    with pytest.raises(AllotmentExhausted):
        make_reservation(ctx, hotel)


def test_control_without_the_guard_the_booking_sells_past_the_allotment_unseen(ctx, pg_db):
    """The control: the booking trusts the answer for the plan as it read it; it sells on
    nights whose allotment of 1 was set meanwhile, and the channels still hold 1 left."""
    errors, hotel = _booking_across_a_first_allotment(ctx, guard=False)
    assert errors == []
    assert left(ctx, hotel, 0, 1) == {0: 0, 1: 0}
    assert _projected_left(ctx, hotel, 0, 1) == {0: 1, 1: 1}
