"""Fifty identical submissions with one confirmation number (a channel retrying a booking) in
parallel over real HTTP: one reservation, one inventory decrement, the others 200 with it."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from pms.db.uow import read_scope
from pms.models import Reservation
from pms.models.inventory import InventoryDay
from tests.concurrency.conftest import fire
from tests.factories import make_booking_hotel, reservation_body
from tests.helpers import random_ref

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.mark.parametrize("rooms", [1, 5])
def test_fifty_identical_submissions_fold_into_one_reservation(pms_server, pg_db, ctx, rooms):
    hotel = make_booking_hotel(ctx, rooms=rooms)
    number = random_ref("OTA").upper()
    url = f"{pms_server.base_url}/v1/properties/{hotel.id}/reservations"
    headers = pms_server.headers(ctx.env_id)
    body = reservation_body(hotel, confirmation_number=number, source="CHANNEL", channel="OTA")

    def send(i: int, session: Any) -> tuple[int, str]:
        resp = session.post(url, json=body, headers=headers, timeout=60)
        return resp.status_code, resp.json().get("id") or resp.json().get("code")

    results = fire(50, send)
    statuses = Counter(status for status, _ in results)
    assert statuses == Counter({201: 1, 200: 49}), (results, pms_server.log_tail())
    assert len({rid for _, rid in results}) == 1
    with read_scope(ctx):
        rows = list(Reservation.select().where(Reservation.confirmation_number == number))
        sold = {d.date: d.sold for d in InventoryDay.select().where(
            InventoryDay.room_type == hotel.room_type.id) if d.sold}
    assert len(rows) == 1 and str(rows[0].id) == results[0][1]
    # the stay's two nights sold once each, no other night of the calendar sold
    assert sold == {hotel.today: 1, hotel.today + timedelta(days=1): 1}
