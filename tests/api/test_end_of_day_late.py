"""The night audit may be at most one day late, through the HTTP API on SQLite and PostgreSQL:
a property whose business date is more than a day behind its local date is refused (409
night_audit_overdue naming the business date, the local date and the missed days) and nothing
moves; `catch_up` closes every missed day in order in one job, each run audited as a catch-up,
and lands the property on its local date. A day late (the usual audit after midnight) is not
refused: the control."""

from __future__ import annotations

from datetime import timedelta

from pms.db.uow import read_scope
from pms.models import Property
from pms.models.end_of_day import NightAuditRun
from pms.models.platform import AuditEntry
from tests.api.test_end_of_day import hotel, job_worker, wait_job  # noqa: F401  (fixtures)
from tests.helpers import assert_problem


def _behind(ctx, hotel, days: int) -> None:  # noqa: F811
    """The property's business date `days` before its local date (audits missed)."""
    with read_scope(ctx):
        Property.update(business_date=hotel.today - timedelta(days=days)).where(
            Property.id == hotel.id).execute()


def _runs(ctx, hotel) -> list[str]:  # noqa: F811
    with read_scope(ctx):
        return [r.business_date.isoformat() for r in NightAuditRun.select().where(
            NightAuditRun.property == hotel.id).order_by(NightAuditRun.business_date)]


def test_an_audit_more_than_a_day_late_is_refused_naming_the_dates(api, ctx, hotel):  # noqa: F811
    _behind(ctx, hotel, 3)
    url = f"/v1/properties/{hotel.id}/end-of-day"
    body = assert_problem(api.post(url, {}), 409, "night_audit_overdue")
    missed = [(hotel.today - timedelta(days=n)).isoformat() for n in (3, 2, 1)]
    assert body["business_date"] == missed[0]
    assert body["local_date"] == hotel.today.isoformat()
    assert body["missed_dates"] == missed
    assert missed[0] in body["detail"] and hotel.today.isoformat() in body["detail"]
    # an override (a date not over yet) is no way around it; a dry run writes nothing
    assert_problem(api.post(url, {"override_reason": "try"}), 409, "night_audit_overdue")
    assert api.post(url, {"dry_run": True}).status_code == 200
    assert _runs(ctx, hotel) == []
    with read_scope(ctx):
        assert Property.get_by_id(hotel.id).business_date.isoformat() == missed[0]


def test_the_catch_up_closes_every_missed_day_in_order_audited(api, ctx, hotel):  # noqa: F811
    _behind(ctx, hotel, 3)
    resp = api.post(f"/v1/properties/{hotel.id}/end-of-day", {"catch_up": True})
    assert resp.status_code == 202, resp.text
    job = wait_job(api, resp.json["id"], timeout=30)
    assert job["status"] == "SUCCEEDED", job
    run = api.get(f"/v1/jobs/{job['id']}/result").json["result"]
    missed = [(hotel.today - timedelta(days=n)).isoformat() for n in (3, 2, 1)]
    assert run["caught_up"] == missed and run["business_date"] == missed[-1]
    assert _runs(ctx, hotel) == missed
    with read_scope(ctx):
        assert Property.get_by_id(hotel.id).business_date == hotel.today
        reasons = [a.reason for a in AuditEntry.select().where(
            AuditEntry.action == "night_audit.started").order_by(AuditEntry.created_at)]
    assert len(reasons) == 3 and all(r and r.startswith("catch-up: ") for r in reasons)
    assert [r.split()[1] for r in reasons] == missed


def test_a_day_late_is_the_usual_audit_and_is_not_refused(api, ctx, hotel):  # noqa: F811
    _behind(ctx, hotel, 1)
    resp = api.post(f"/v1/properties/{hotel.id}/end-of-day", {})
    assert resp.status_code == 202, resp.text
    job = wait_job(api, resp.json["id"])
    assert job["status"] == "SUCCEEDED", job
    assert _runs(ctx, hotel) == [(hotel.today - timedelta(days=1)).isoformat()]
