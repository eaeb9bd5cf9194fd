"""Concurrent creates, edits and cancels on overlapping nights of one room type, over real HTTP:
afterwards every night's `sold` equals the number of live reservations holding it (checked in
SQL), and never exceeds what can be sold."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from pms.db.database import db
from pms.db.uow import read_scope
from tests.concurrency.conftest import fire
from tests.factories import make_booking_hotel, make_reservation, reservation_body

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

SOLD_VS_LIVE = """
SELECT d.date, d.sold, d.physical - d.ooo - d.oos AS capacity,
       (SELECT count(*) FROM reservation r
         WHERE r.room_type_id = d.room_type_id AND r.status IN ('CONFIRMED', 'CHECKED_IN')
           AND r.arrival_date <= d.date AND r.departure_date > d.date) AS live
  FROM inventory_day d WHERE d.room_type_id = %s ORDER BY d.date
"""


def _stay(rng: random.Random, today: Any) -> tuple[str, str]:
    start = today + timedelta(days=rng.randint(0, 4))
    end = start + timedelta(days=rng.randint(1, 3))
    return start.isoformat(), end.isoformat()


def test_mixed_edit_cancel_create_keep_sold_equal_to_live_reservations(pms_server, pg_db, ctx):
    rng = random.Random(20261121)
    hotel = make_booking_hotel(ctx, rooms=4)
    today = hotel.today
    existing = []
    for i in range(6):
        arrival = today + timedelta(days=i % 4)
        existing.append(make_reservation(ctx, hotel, arrival_date=arrival.isoformat(),
                                         departure_date=(arrival + timedelta(days=2)).isoformat()))
    base = f"{pms_server.base_url}/v1/properties/{hotel.id}/reservations"
    headers = pms_server.headers(ctx.env_id)
    ops: list[tuple[str, str, Any]] = []
    for _ in range(24):
        arrival, departure = _stay(rng, today)
        ops.append(("POST", base, reservation_body(hotel, arrival_date=arrival,
                                                   departure_date=departure)))
    for row in existing:
        for _ in range(2):
            arrival, departure = _stay(rng, today)
            ops.append(("PUT", f"{base}/{row.id}", {"arrival_date": arrival,
                                                     "departure_date": departure}))
    for row in existing[::2]:
        ops.append(("POST", f"{base}/{row.id}/cancel", None))
    rng.shuffle(ops)

    def send(i: int, session: Any) -> int:
        method, url, body = ops[i]
        resp = session.request(method, url, json=body, headers=headers, timeout=60)
        return resp.status_code

    statuses = Counter(fire(len(ops), send))
    assert set(statuses) <= {200, 201, 409, 503}, (statuses, pms_server.log_tail())
    assert statuses[201] >= 1 and statuses[200] >= 1, statuses
    with read_scope(ctx):
        rows = db.execute_sql(SOLD_VS_LIVE, (str(hotel.room_type.id),)).fetchall()
    assert rows
    for night, sold, capacity, live in rows:
        assert sold == live, (night, sold, live, statuses)
        assert sold <= capacity, (night, sold, capacity)
