"""The night audit cannot run ahead of the calendar: a run closes a business date only once the
property's local date has passed it (409 `business_date_not_over` before that); a staff
override names its reason (`override_reason`), which is audited."""

from __future__ import annotations

from datetime import timedelta

from pms.db.uow import read_scope, unit_of_work
from pms.devkeys import mint_token
from pms.models import Property
from pms.models.end_of_day import NightAuditRun
from pms.models.platform import AuditEntry
from tests.api.test_end_of_day import job_worker, wait_job  # noqa: F401 - the worker fixture
from tests.factories import make_booking_hotel, make_checked_in
from tests.helpers import assert_problem


def _business_date(ctx, hotel):
    with read_scope(ctx):
        return Property.get_by_id(hotel.id).business_date


def test_closing_the_local_date_is_409_and_back_to_back_runs_need_an_override(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=2)
    make_checked_in(ctx, hotel)
    url = f"/v1/properties/{hotel.id}/end-of-day"
    # the property's local date is its business date: the day is not over
    body = assert_problem(api.post(url, {}), 409, "business_date_not_over")
    assert body["business_date"] == hotel.today.isoformat()
    assert body["local_date"] == hotel.today.isoformat()
    assert_problem(api.post("/v1/jobs", {"kind": "end_of_day", "property_id": str(hotel.id)}),
                   409, "business_date_not_over")
    with read_scope(ctx):
        assert NightAuditRun.select().where(NightAuditRun.property == hotel.id).count() == 0
    assert _business_date(ctx, hotel) in (None, hotel.today)
    # the dry run writes nothing and is answered
    assert api.post(url, {"dry_run": True}).status_code == 200
    # a staff override names its reason: the run starts, the reason is audited
    reason = "closing early: the hotel shuts at 22:00 for the move"
    started = api.post(url, {"override_reason": reason})
    assert started.status_code == 202, started.text
    assert wait_job(api, started.json["id"])["status"] == "SUCCEEDED"
    assert _business_date(ctx, hotel) == hotel.today + timedelta(days=1)
    with read_scope(ctx):
        rows = list(AuditEntry.select().where(AuditEntry.action == "night_audit.started"))
    assert [(r.reason, r.actor_sub) for r in rows] == [(reason, "dev-user")]
    # a second run at once would close tomorrow: refused again, the date stays
    again = assert_problem(api.post(url, {}), 409, "business_date_not_over")
    assert again["business_date"] == (hotel.today + timedelta(days=1)).isoformat()
    assert _business_date(ctx, hotel) == hotel.today + timedelta(days=1)


def test_a_business_date_the_local_date_has_passed_closes_without_an_override(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    yesterday = hotel.today - timedelta(days=1)
    with unit_of_work(ctx):
        Property.update(business_date=yesterday).where(Property.id == hotel.id).execute()
    resp = api.post(f"/v1/properties/{hotel.id}/end-of-day", {})
    assert resp.status_code == 202, resp.text
    assert wait_job(api, resp.json["id"])["status"] == "SUCCEEDED"
    assert _business_date(ctx, hotel) == hotel.today


def test_the_override_reason_is_checked_and_is_for_staff_only(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    url = f"/v1/properties/{hotel.id}/end-of-day"
    for bad in ("", " ", "x" * 501, 5):
        problem = assert_problem(api.post(url, {"override_reason": bad}), 422)
        assert problem["errors"][0]["field"] == "override_reason", problem
    machine = mint_token(api.settings, env_id=api.env_id, client_kind="machine", sub="batch")
    assert_problem(api.post(url, {"override_reason": "batch run"}, token=machine), 403,
                   "override_not_allowed")
    with read_scope(ctx):
        assert NightAuditRun.select().where(NightAuditRun.property == hotel.id).count() == 0
    assert api.post(url, {"override_reason": "x" * 500}).status_code == 202


def test_a_property_never_audited_closes_the_day_before_its_local_date(api, ctx):
    hotel = make_booking_hotel(ctx, rooms=1)
    assert _business_date(ctx, hotel) is None  # on its local date until a first audit
    url = f"/v1/properties/{hotel.id}/end-of-day"
    refused = assert_problem(api.post(url, {}), 409, "business_date_not_over")
    yesterday = hotel.today - timedelta(days=1)
    assert yesterday.isoformat() in refused["detail"]
    # two days back is neither current nor the day before: refused as before
    assert_problem(api.post(url, {"business_date": (yesterday - timedelta(days=1)).isoformat()}),
                   409, "business_date_not_current")
    resp = api.post(url, {"business_date": yesterday.isoformat()})
    assert resp.status_code == 202, resp.text
    assert wait_job(api, resp.json["id"])["status"] == "SUCCEEDED"
    # it lands on the calendar, not a day ahead of it
    assert _business_date(ctx, hotel) == hotel.today
    assert_problem(api.post(url, {}), 409, "business_date_not_over")
