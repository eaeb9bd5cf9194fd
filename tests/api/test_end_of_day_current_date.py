"""only the property's current business date can be closed; any other date
(one without a run) is 409 `business_date_not_current`, and the property stays where it was."""

from __future__ import annotations

from datetime import timedelta

from pms.db.uow import read_scope
from pms.models import Property
from pms.models.end_of_day import NightAuditRun
from tests.factories import make_booking_hotel
from tests.helpers import EOD_OVERRIDE, assert_problem


def test_a_date_other_than_the_current_business_date_is_409_and_moves_nothing(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    url = f"/v1/properties/{hotel.id}/end-of-day"
    for day in ("2090-01-01", (hotel.today + timedelta(days=1)).isoformat(),
                (hotel.today - timedelta(days=3)).isoformat()):
        for dry_run in (False, True):
            resp = api.post(url, {"business_date": day, "dry_run": dry_run})
            body = assert_problem(resp, 409, "business_date_not_current")
            assert body["current_business_date"] == hotel.today.isoformat()
    with read_scope(ctx):
        prop = Property.get_by_id(hotel.id)
        assert prop.business_date in (None, hotel.today)
        assert NightAuditRun.select().where(NightAuditRun.property == hotel.id).count() == 0
    # a booking for today still works: the property did not move
    from tests.factories import reservation_body

    booked = api.post(f"/v1/properties/{hotel.id}/reservations", reservation_body(hotel))
    assert booked.status_code == 201, booked.text
    # the current date is accepted (named or not)
    assert api.post(url, {"business_date": hotel.today.isoformat(),
                          "dry_run": True}).status_code == 200
    queued = api.post(url, {"business_date": hotel.today.isoformat(),
                            "override_reason": EOD_OVERRIDE})
    assert queued.status_code == 202, queued.text
