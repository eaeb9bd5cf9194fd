"""A guest in house may shorten the stay to leave today (the morning's departures): the edit is
accepted for a departure on the business date, refused before it (422)."""

from __future__ import annotations

from datetime import timedelta

from tests.factories import make_booking_hotel, make_checked_in
from tests.helpers import EOD_OVERRIDE, assert_problem


def test_an_in_house_guest_can_shorten_the_stay_to_leave_today(api, ctx):
    from pms.services.night_audit.end_of_day import run_night_audit

    hotel = make_booking_hotel(ctx, rooms=2)
    row = make_checked_in(ctx, hotel,
                          departure_date=(hotel.today + timedelta(days=3)).isoformat())
    for _ in range(2):  # the guest's first two nights
        run_night_audit(ctx, hotel.id, override_reason=EOD_OVERRIDE)
    today = hotel.today + timedelta(days=2)
    path = f"/v1/properties/{hotel.id}/reservations/{row.id}"
    before = assert_problem(api.put(path, {"departure_date": str(today - timedelta(days=1))}),
                            422, "validation_failed")
    assert before["errors"][0]["field"] == "departure_date"
    leaves = api.put(path, {"departure_date": str(today)})
    assert leaves.status_code == 200, leaves.text
    assert leaves.json["departure_date"] == str(today)
    # and the guest then checks out as any of the morning's departures
    assert api.post(f"{path}/check-out").status_code in (200, 409)
