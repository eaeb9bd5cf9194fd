"""Check-in without a room number under real concurrency on PostgreSQL: ten guests
checked in at once, twelve rooms free, every check-in gets its own room.

Threads (each with its own pooled connection) call the check-in service together; a test-only
hook pauses each one right after it picked its room, so every picker overlaps the others. The
control run picks without locking (`wiring.installed(locking_enabled=False)`, as the code before
the fix picked) and must refuse some guests although rooms are free, which shows the real test is
able to fail.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pms import wiring
from pms.db.database import db
from pms.db.uow import read_scope
from pms.errors import RoomUnavailable
from pms.models import Reservation
from pms.schemas.reservations import CheckInIn
from pms.services.frontdesk import checkin
from tests.factories import make_booking_hotel, make_reservation

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

GUESTS, ROOMS = 10, 12
# Each picker holds its room's lock through the pause; the others skip it, so nobody waits.
LOCKED_PAUSE_S = 0.2
# The control takes no lock: the pause makes every picker choose before anyone commits.
CONTROL_PAUSE_S = 0.5


def _race(ctx, **switches: Any) -> tuple[list[str], list[BaseException], list[Reservation]]:
    """Check every guest in at once, under the TEST-ONLY `switches` (pms.wiring)."""
    hotel = make_booking_hotel(ctx, rooms=ROOMS)
    guests = [make_reservation(ctx, hotel) for _ in range(GUESTS)]
    barrier = threading.Barrier(GUESTS, timeout=120)

    def check_in(reservation_id) -> str:
        barrier.wait()
        try:
            checkin.check_in(ctx, hotel.id, reservation_id, CheckInIn())
            return "in"
        except RoomUnavailable:
            return "room_unavailable"
        finally:
            db.close()

    with wiring.installed(**switches), ThreadPoolExecutor(max_workers=GUESTS) as pool:
        futures = [pool.submit(check_in, g.id) for g in guests]
    results, errors = [], []
    for f in futures:
        try:
            results.append(f.result())
        except BaseException as exc:  # noqa: BLE001 - reported by the assertions
            errors.append(exc)
    with read_scope(ctx):
        rows = list(Reservation.select().where(Reservation.id.in_([g.id for g in guests])))
    return results, errors, rows


def test_check_in_auto_room_succeeds_whenever_a_room_is_free(ctx, pg_db):
    results, errors, rows = _race(ctx, pause_after_pick=lambda: time.sleep(LOCKED_PAUSE_S))
    assert errors == []
    assert results.count("in") == GUESTS, results
    rooms = [r.room_id for r in rows]
    assert all(r.status == "CHECKED_IN" for r in rows)
    assert None not in rooms and len(set(rooms)) == GUESTS


def test_control_without_a_locked_pick_refuses_guests_while_rooms_are_free(ctx, pg_db):
    results, errors, rows = _race(ctx, locking_enabled=False,
                                  pause_after_pick=lambda: time.sleep(CONTROL_PAUSE_S))
    assert errors == []
    # every guest picked the same first free room: one got it, the others were refused
    assert results.count("room_unavailable") >= 1, results
    checked_in = [r.room_id for r in rows if r.status == "CHECKED_IN"]
    assert len(set(checked_in)) == len(checked_in)
