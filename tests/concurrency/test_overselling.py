"""The last sellable room, fought over by 200 parallel HTTP requests against gunicorn on
PostgreSQL: exactly one booking wins, 199 answer 409 room_type_unavailable, nothing is oversold.
Twenty rounds, each on a fresh room type. The control run switches locking off (TEST-ONLY
PMS_TEST_DISABLE_LOCKING=1) and shows the oversell, so the test is known to be able to fail.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from pms.db.uow import read_scope, unit_of_work
from pms.domain.stay import stay_nights
from pms.models import Reservation
from pms.models.inventory import InventoryDay
from pms.services.inventory import inventory
from tests.concurrency.conftest import fire, start_server
from tests.factories import (
    load_rates,
    make_booking_hotel,
    make_room,
    make_room_type,
    reservation_body,
)

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

REQUESTS = 200
ROUNDS = 20


def _new_room_type(ctx: Any, hotel: Any, rooms: int = 1) -> Any:
    room_type = make_room_type(ctx, hotel.id)
    for _ in range(rooms):
        make_room(ctx, hotel.id, room_type.id)
    load_rates(ctx, hotel.id, hotel.rate_plan.id, room_type.id)
    # The nights' inventory rows exist before the race (as they do for any loaded hotel), so
    # the requests contend on the row locks, not on the first insert of the rows.
    with unit_of_work(ctx):
        inventory.ensure_days(hotel.id, room_type.id, stay_nights(
            hotel.today, hotel.today + timedelta(days=2)))
    return room_type


def _race(server: Any, ctx: Any, hotel: Any, room_type: Any, n: int) -> Counter:
    url = f"{server.base_url}/v1/properties/{hotel.id}/reservations"
    headers = server.headers(ctx.env_id)
    body = reservation_body(hotel, room_type_id=str(room_type.id))

    def send(i: int, session: Any) -> tuple[int, str]:
        resp = session.post(url, json=body, headers=headers, timeout=60)
        code = resp.json().get("code", "") if resp.status_code >= 400 else ""
        return resp.status_code, code

    return Counter(fire(n, send, pool=min(n, 100)))


def _sold_vs_capacity(ctx: Any, room_type: Any) -> list[tuple[int, int]]:
    with read_scope(ctx):
        return [(d.sold, d.physical - d.ooo - d.oos) for d in
                InventoryDay.select().where(InventoryDay.room_type == room_type.id)]


def _sold_nights(ctx: Any, room_type: Any) -> dict[Any, int]:
    """The nights with rooms sold (the room type has calendar rows for its whole horizon)."""
    with read_scope(ctx):
        return {d.date: d.sold for d in
                InventoryDay.select().where(InventoryDay.room_type == room_type.id) if d.sold}


def _reservations(ctx: Any, room_type: Any) -> int:
    with read_scope(ctx):
        return Reservation.select().where(Reservation.room_type == room_type.id).count()


def test_two_hundred_requests_for_the_last_room_sell_it_once(pms_server, pg_db, ctx):
    hotel = make_booking_hotel(ctx, rooms=0)
    for round_no in range(ROUNDS):
        room_type = _new_room_type(ctx, hotel)
        outcome = _race(pms_server, ctx, hotel, room_type, REQUESTS)
        assert outcome == Counter({(201, ""): 1, (409, "room_type_unavailable"): REQUESTS - 1}), (
            round_no, outcome, pms_server.log_tail())
        assert all(sold <= capacity for sold, capacity in _sold_vs_capacity(ctx, room_type))
        assert _sold_nights(ctx, room_type) == {hotel.today: 1, hotel.today + timedelta(days=1): 1}
        assert _reservations(ctx, room_type) == 1


def test_control_without_locking_oversells(pg_database, base_settings, pg_db, ctx, tmp_path):
    server = start_server(pg_database, base_settings, tmp_path, extra_env={
        "PMS_TEST_DISABLE_LOCKING": "1", "PMS_TEST_PAUSE_AFTER_CHECK_MS": "200"})
    try:
        hotel = make_booking_hotel(ctx, rooms=0)
        room_type = _new_room_type(ctx, hotel)
        outcome = _race(server, ctx, hotel, room_type, 40)
    finally:
        server.stop()
    created = outcome[(201, "")]
    assert created > 1, outcome  # the race is real: more than one booking for one room
    # One physical room, several live reservations for its nights: oversold (and the
    # unguarded read-then-write also loses updates of `sold`).
    with read_scope(ctx):  # the first night's row (the calendar has rows for the horizon)
        first = InventoryDay.get((InventoryDay.room_type == room_type.id)
                                 & (InventoryDay.date == hotel.today))
    capacity = first.physical - first.ooo - first.oos
    assert _reservations(ctx, room_type) == created > capacity
