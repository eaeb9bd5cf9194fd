"""Late check-out has a key story, through the HTTP API on SQLite and PostgreSQL: a stay's
`departure_time` (a reservation edit, local "HH:MM") moves its live keys' `valid_until` to that
time of its departure date, and lets a key be issued on the departure day after the property's
check-out time, until the late departure; null goes back to the property's check-out time."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from pms.db.uow import unit_of_work
from tests.factories import make_booking_hotel, make_checked_in
from tests.helpers import assert_problem, outbox_types


def _noon_zone(now: datetime) -> str:
    """A fixed-offset zone where `now` is around local noon (so that 11:00 has passed and
    15:00 is still ahead, whenever the test runs)."""
    offset = 12 - now.hour
    offset = offset - 24 if offset > 14 else offset + 24 if offset < -12 else offset
    return "Etc/GMT" if offset == 0 else f"Etc/GMT{-offset:+d}"


@pytest.fixture
def hotel(ctx):
    return make_booking_hotel(ctx, rooms=2, timezone=_noon_zone(ctx.now))


def _at(hotel, day, hhmm: str) -> str:
    local = datetime.combine(day, time.fromisoformat(hhmm), tzinfo=ZoneInfo(hotel.prop.timezone))
    return local.astimezone(ZoneInfo("UTC")).isoformat().replace("+00:00", "Z")


def _issue(api, hotel, stay):
    return api.post(f"/v1/properties/{hotel.id}/digital-keys",
                    {"reservation_id": str(stay.id), "key_type": "MOBILE"})


def _edit(api, hotel, stay, body):
    return api.put(f"/v1/properties/{hotel.id}/reservations/{stay.id}", body)


def _same_instant(a: str, b: str) -> bool:
    return datetime.fromisoformat(a.replace("Z", "+00:00")) == datetime.fromisoformat(
        b.replace("Z", "+00:00"))


def test_a_late_check_out_moves_the_keys_end_and_back(api, ctx, hotel):
    stay = make_checked_in(ctx, hotel)
    key = _issue(api, hotel, stay).json
    assert _same_instant(key["valid_until"], _at(hotel, stay.departure_date, "11:00"))
    late = _edit(api, hotel, stay, {"departure_time": "15:00"})
    assert late.status_code == 200, late.text
    assert late.json["departure_time"] == "15:00"
    [moved] = api.get(f"/v1/properties/{hotel.id}/digital-keys",
                      params={"reservation_id": str(stay.id)}).json["data"]
    assert _same_instant(moved["valid_until"], _at(hotel, stay.departure_date, "15:00"))
    assert moved["lock"]["state"] == "pending"  # the lock learns the new end
    assert "hotel:pms:digital_key:validity_changed" in outbox_types(ctx)
    back = _edit(api, hotel, stay, {"departure_time": None})
    assert back.status_code == 200 and back.json["departure_time"] is None
    [again] = api.get(f"/v1/properties/{hotel.id}/digital-keys",
                      params={"reservation_id": str(stay.id)}).json["data"]
    assert _same_instant(again["valid_until"], _at(hotel, stay.departure_date, "11:00"))


def test_on_the_departure_day_a_late_check_out_opens_the_key_window_again(api, ctx, hotel):
    from pms.models import Reservation

    stay = make_checked_in(ctx, hotel)
    with unit_of_work(ctx):  # the departure day of a night that began yesterday, past 11:00
        Reservation.update(arrival_date=hotel.today - timedelta(days=1),
                           departure_date=hotel.today).where(Reservation.id == stay.id).execute()
    assert_problem(_issue(api, hotel, stay), 409, "key_validity_ended")
    assert _edit(api, hotel, stay, {"departure_time": "15:00"}).status_code == 200
    issued = _issue(api, hotel, stay)
    assert issued.status_code == 201, issued.text
    assert _same_instant(issued.json["valid_until"], _at(hotel, hotel.today, "15:00"))


@pytest.mark.parametrize("value", ["25:00", "3pm", "15:00:00", 15])
def test_a_departure_time_is_a_local_hh_mm(api, ctx, hotel, value):
    stay = make_checked_in(ctx, hotel)
    problem = assert_problem(_edit(api, hotel, stay, {"departure_time": value}), 422)
    assert problem["errors"][0]["field"] == "departure_time"
