"""The night audit over HTTP: POST queues an async job (202, /v1/jobs/{id} and its result), a
finished date answers with its run, a dry run answers with the plan, GET lists the end-of-day
log; reports by name."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.factories import make_booking_hotel, make_checked_in, make_reservation
from tests.helpers import EOD_OVERRIDE, assert_problem


@pytest.fixture(autouse=True)
def job_worker(database):
    """StubBroker worker threads: the job runs once the relay hands its queued event to
    `run_job` (see pump)."""
    import dramatiq

    from workers import actors
    from workers.runtime import stop_worker

    worker = dramatiq.Worker(actors.broker, worker_threads=1, worker_timeout=50)
    worker.start()
    yield actors.broker
    stop_worker(worker)


def pump(env_id):
    """Relay the env's outbox (the job's `hotel:pms:job:queued` sends `run_job`)."""
    from workers.publisher import LocalEventPublisher
    from workers.relay import OutboxRelay
    from workers.subscriptions import default_subscribers

    OutboxRelay(LocalEventPublisher(), subscribers=default_subscribers(), env_id=env_id).run_once()


@pytest.fixture
def hotel(ctx, database):
    hotel = make_booking_hotel(ctx, rooms=3)
    make_checked_in(ctx, hotel)
    make_reservation(ctx, hotel)
    return hotel


def wait_job(api, job_id, timeout=120.0):
    pump(api.env_id)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = api.get(f"/v1/jobs/{job_id}").json
        if job["status"] in ("SUCCEEDED", "FAILED"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish: {job}")


def test_end_of_day_runs_as_a_job_and_lands_in_the_log(api, hotel):
    base = f"/v1/properties/{hotel.id}"
    resp = api.post(f"{base}/end-of-day", {"override_reason": EOD_OVERRIDE})
    assert resp.status_code == 202, resp.text
    assert resp.headers["location"] == f"/v1/jobs/{resp.json['id']}"
    job = wait_job(api, resp.json["id"])
    assert job["status"] == "SUCCEEDED", job
    result = api.get(f"/v1/jobs/{job['id']}/result").json
    run = result["result"]
    assert run["status"] == "DONE" and run["business_date"] == hotel.today.isoformat()
    assert {s["name"]: s["count"] for s in run["steps"]}["no_shows"] == 1
    log = api.get(f"{base}/end-of-day").json["data"]
    assert [r["id"] for r in log] == [run["id"]] and log[0]["figures"]["rooms_sold"] == 1
    again = api.post(f"{base}/end-of-day", {"business_date": hotel.today.isoformat()})
    assert again.status_code == 200 and again.json["id"] == run["id"]
    manager = api.get(f"{base}/reports/manager", params={
        "business_date": hotel.today.isoformat()}).json
    assert manager["rows"][0]["rooms_sold"] == 1


def test_dry_run_answers_with_the_plan(api, hotel):
    resp = api.post(f"/v1/properties/{hotel.id}/end-of-day", {"dry_run": True})
    assert resp.status_code == 200, resp.text
    assert resp.json["status"] == "PREVIEW" and resp.json["dry_run"] is True
    assert api.get(f"/v1/properties/{hotel.id}/end-of-day").json["data"] == []


def test_reports_by_name(api, hotel):
    base = f"/v1/properties/{hotel.id}/reports"
    for name in ("arrivals", "departures", "in-house", "occupancy-forecast", "manager",
                 "open-folios"):
        resp = api.get(f"{base}/{name}")
        assert resp.status_code == 200, (name, resp.text)
    assert api.get(f"{base}/arrivals").json["count"] == 2
    assert api.get(f"{base}/in-house").json["count"] == 1
    forecast = api.get(f"{base}/occupancy-forecast", params={"days": 3}).json["rows"]
    assert len(forecast) == 3 and forecast[0]["rooms_sold"] == 2
    assert api.get(f"{base}/open-folios").json["count"] == 1
    assert_problem(api.get(f"{base}/nonsense"), 404)
    assert_problem(api.get(f"{base}/arrivals", params={"days": 0}), 422)
    assert_problem(api.get(f"{base}/arrivals", params={"business_date": "2026-13-01"}), 422)


def test_unknown_job_is_404(api, database):
    assert_problem(api.get(f"/v1/jobs/{uuid.uuid4()}"), 404)
    assert_problem(api.get(f"/v1/jobs/{uuid.uuid4()}/result"), 404)


def test_jobs_endpoint_starts_and_lists_the_night_audit(api, hotel):
    resp = api.post("/v1/jobs", {"kind": "end_of_day", "property_id": str(hotel.id),
                                 "input": {"override_reason": EOD_OVERRIDE}})
    assert resp.status_code == 202, resp.text
    job = wait_job(api, resp.json["id"])
    assert job["status"] == "SUCCEEDED" and job["kind"] == "end_of_day"
    listed = api.get("/v1/jobs").json["data"]
    assert [j["id"] for j in listed] == [job["id"]]
    # an id in the body naming nothing is 422 naming the field (404 is for the path)
    unknown = assert_problem(api.post("/v1/jobs", {"kind": "end_of_day",
                                                    "property_id": str(uuid.uuid4())}), 422)
    assert unknown["errors"][0]["field"] == "property_id"
    assert_problem(api.post("/v1/jobs", {"kind": "reindex", "property_id": str(hotel.id)}), 422)
