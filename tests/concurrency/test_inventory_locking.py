"""take_rooms under real concurrency on PostgreSQL: the last room is sold exactly once.

Threads (each with its own pooled connection) race for the last room of a type; a test-only hook
pauses every taker after its availability check to widen the race window. The control run turns
locking off (`wiring.installed(locking_enabled=False)`: no row lock, no guarded update) and must
oversell, which shows the real test is able to fail.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta

import pytest

from pms import wiring
from pms.db import locking
from pms.db.database import db
from pms.db.uow import read_scope, unit_of_work
from pms.domain.stay import stay_nights
from pms.errors import RoomTypeUnavailable
from pms.models.inventory import InventoryDay
from pms.services.inventory import inventory
from tests.factories import make_property, make_room, make_room_type

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

THREADS = 12
NIGHTS = stay_nights(date(2031, 5, 1), date(2031, 5, 4))


# With locking on, every taker holds the nights' locks through the pause, so the last of them
# waits about THREADS x pause: keep it short, far below the lock timeout even on a loaded box.
LOCKED_PAUSE_S = 0.03
# The control takes no locks; a longer pause makes sure every taker checks before anyone writes.
CONTROL_PAUSE_S = 0.5


@pytest.fixture
def racing(pg_db) -> Iterator[None]:
    """Pause each taker after its check (widen the window), restore everything afterwards."""
    with wiring.installed(pause_after_check=lambda: time.sleep(LOCKED_PAUSE_S)):
        yield


def _one_room_hotel(ctx, rooms: int = 1, *, calendar: bool = True):
    prop = make_property(ctx)
    room_type = make_room_type(ctx, prop.id)
    for _ in range(rooms):
        make_room(ctx, prop.id, room_type.id)
    if not calendar:
        return prop, room_type
    # Existing calendar rows, as in production: a brand-new row would make concurrent first
    # bookings queue on PostgreSQL's speculative insert and hide the race from the control.
    inventory.ensure_inventory(ctx, prop.id, room_type.id, NIGHTS[0], NIGHTS[-1] + timedelta(days=1))
    return prop, room_type


def _race(ctx, prop, room_type, threads: int = THREADS) -> tuple[int, int, list[BaseException]]:
    barrier = threading.Barrier(threads, timeout=120)

    def take() -> str:
        barrier.wait()
        try:
            with unit_of_work(ctx):
                inventory.take_rooms(prop.id, room_type.id, NIGHTS)
            return "sold"
        except RoomTypeUnavailable:
            return "unavailable"
        finally:
            db.close()

    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(take) for _ in range(threads)]
    results, errors = [], []
    for f in futures:
        try:
            results.append(f.result())
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
    return results.count("sold"), results.count("unavailable"), errors


def _sold(ctx, room_type) -> list[int | None]:
    """Sold per night of NIGHTS (None: no row). The room type also has its calendar rows for
    the horizon ahead of today: none of those may be sold."""
    with read_scope(ctx):
        rows = {d.date: d.sold for d in
                InventoryDay.select().where(InventoryDay.room_type == room_type.id)}
    assert not [day for day, n in rows.items() if n and day not in NIGHTS]
    return [rows.get(night) for night in NIGHTS]


@pytest.mark.parametrize("round_", range(3))
def test_last_room_is_sold_exactly_once(ctx, racing, round_):
    prop, room_type = _one_room_hotel(ctx)
    sold, unavailable, errors = _race(ctx, prop, room_type)
    assert errors == []
    assert (sold, unavailable) == (1, THREADS - 1)
    assert _sold(ctx, room_type) == [1, 1, 1]


def test_last_room_on_a_fresh_calendar_is_sold_exactly_once(ctx, racing):
    prop, room_type = _one_room_hotel(ctx, calendar=False)
    assert _sold(ctx, room_type) == [None, None, None]  # beyond the room type's horizon
    sold, unavailable, errors = _race(ctx, prop, room_type)
    assert errors == [] and (sold, unavailable) == (1, THREADS - 1)
    assert _sold(ctx, room_type) == [1, 1, 1]


def test_two_rooms_are_sold_exactly_twice(ctx, racing):
    prop, room_type = _one_room_hotel(ctx, rooms=2)
    sold, unavailable, errors = _race(ctx, prop, room_type)
    assert errors == [] and (sold, unavailable) == (2, THREADS - 2)
    assert _sold(ctx, room_type) == [2, 2, 2]


def test_control_without_locking_oversells(ctx, pg_db):
    prop, room_type = _one_room_hotel(ctx)
    with wiring.installed(locking_enabled=False,
                          pause_after_check=lambda: time.sleep(CONTROL_PAUSE_S)):
        sold, _, errors = _race(ctx, prop, room_type)
    # Without the row locks taken in date order, two takers' multi-row UPDATEs can deadlock
    # (PostgreSQL aborts one: LockTimeout); that is the control's disorder, not a result.
    assert all(isinstance(e, locking.LockTimeout) for e in errors), errors
    assert sold > 1, "with locking off the race must oversell, or this test cannot fail"


def test_busy_nights_answer_lock_timeout(ctx, pg_db):
    """A taker that cannot get the row lock in time gets LockTimeout (503), not a hang."""
    prop, room_type = _one_room_hotel(ctx, rooms=3)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with unit_of_work(ctx):
                inventory.take_rooms(prop.id, room_type.id, NIGHTS)
                holding.set()
                release.wait(10)
        finally:
            db.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        with pytest.raises(locking.LockTimeout) as exc:
            with unit_of_work(ctx):
                locking.set_lock_timeout(200)  # this transaction's wait only, not 4 s
                inventory.take_rooms(prop.id, room_type.id, NIGHTS)
        assert exc.value.status == 503
    finally:
        release.set()
        holder.join(10)
    assert _sold(ctx, room_type) == [1, 1, 1]
