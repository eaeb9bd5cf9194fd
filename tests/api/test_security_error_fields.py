"""Job and night-audit `error` fields carry a stable code, a short message and a reference,
never the exception's text (a driver message may quote the statement's values); the log has
the exception under that reference. Read through the HTTP API, on both backends."""

from __future__ import annotations

import logging
import re

import peewee
import pytest

from pms.db.uow import unit_of_work
from pms.domain.states import JOB_INITIAL
from pms.models.platform import Job
from pms.services import jobs
from pms.services.night_audit.end_of_day import Hooks, run_night_audit
from tests.factories import make_booking_hotel, make_checked_in
from tests.helpers import EOD_OVERRIDE

pytestmark = pytest.mark.usefixtures("database")

LEAK = 'Key (email)=(grace@example.com) already exists: INSERT INTO guest VALUES (\'Hopper\')'
SHAPE = re.compile(r"^[a-z_]+: [^()]+ \(ref ([0-9a-f]{12})\)$")


def _logged(caplog, reference):
    return [r for r in caplog.records if getattr(r, "error_ref", None) == reference]


def test_a_failed_night_audit_run_shows_a_code_and_a_reference(api, ctx, caplog):
    hotel = make_booking_hotel(ctx, rooms=1)
    make_checked_in(ctx, hotel)
    with caplog.at_level(logging.ERROR, logger="pms.night_audit"):
        run_night_audit(ctx, hotel.id, override_reason=EOD_OVERRIDE,
                        hooks=Hooks(fail_in={"housekeeping": [peewee.IntegrityError(LEAK)]}))
    (run,) = api.get(f"/v1/properties/{hotel.id}/end-of-day").json["data"]
    assert run["status"] == "FAILED"
    error = run["error"]
    match = SHAPE.match(error)
    assert match and error.startswith("internal_error: "), error
    for leak in ("grace@example.com", "Hopper", "INSERT", "IntegrityError"):
        assert leak not in error
    (record,) = _logged(caplog, match.group(1))
    assert LEAK in str(record.exc_info[1])


def test_a_failed_job_shows_a_code_and_a_reference(api, ctx, caplog):
    hotel = make_booking_hotel(ctx, rooms=1)
    with unit_of_work(ctx):  # a job whose input makes its run raise (ValueError quoting it)
        job = Job.create(kind=jobs.END_OF_DAY, status=JOB_INITIAL.value, property_id=hotel.id,
                         input={"business_date": LEAK, "run_id": None})
    with caplog.at_level(logging.ERROR, logger="pms.jobs"):
        jobs.run_job(ctx, job.id)
    got = api.get(f"/v1/jobs/{job.id}").json
    assert got["status"] == "FAILED"
    match = SHAPE.match(got["error"])
    assert match and got["error"].startswith("internal_error: "), got["error"]
    assert "grace@example.com" not in got["error"] and "ValueError" not in got["error"]
    result = api.get(f"/v1/jobs/{job.id}/result").json
    assert result["error"] == got["error"]
    (record,) = _logged(caplog, match.group(1))
    assert "grace@example.com" in str(record.exc_info[1])
