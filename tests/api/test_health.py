"""`GET /v1/health` (CONTRACT §3): the payload's fields, the outbox backlog check, the scope gate,
and draining (503 with the payload; other routes refuse new work with problem+json and
Retry-After). The cross-process gauge and SIGTERM are tested under real gunicorn in
tests/ops/test_gunicorn.py."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import falcon.testing
import pytest

from pms import __version__
from pms.api.inflight import LocalInflight
from pms.app import create_app
from pms.db.uow import unit_of_work
from pms.devkeys import mint_token
from pms.models import OutboxEvent
from tests.helpers import assert_problem

HEALTH = "/v1/health"


def test_health_reports_status_in_flight_limits_version_and_checks(api, settings):
    resp = api.get(HEALTH)
    assert resp.status_code == 200, resp.text
    body = resp.json
    assert set(body) == {"status", "in_flight", "limits", "version", "checks"}
    assert body["status"] == "ok"
    assert body["in_flight"] >= 1  # the health request itself is in flight
    assert body["version"] == __version__
    limits = settings.limits
    assert body["limits"]["max_body_bytes"] == limits.max_body_bytes == 1024 * 1024
    assert body["limits"]["max_page_size"] == limits.max_page_size == 200
    assert body["limits"]["request_timeout_s"] == limits.request_timeout_s
    assert body["limits"]["rate_limits_per_minute"] == dict(limits.rate_limits_per_minute)
    checks = body["checks"]
    assert set(checks) == {"database", "broker", "outbox"}
    assert checks["database"]["ok"] is True and checks["database"]["latency_ms"] >= 0
    assert checks["broker"]["ok"] is True
    assert checks["outbox"]["ok"] is True
    assert isinstance(checks["outbox"]["backlog"], int)
    assert isinstance(checks["outbox"]["parked"], int)
    assert "oldest_unpublished_age_s" in checks["outbox"]


def test_outbox_backlog_and_oldest_age_count_unpublished_events(api, clock):
    created = api.post("/v1/properties", {"propertyCode": f"H{uuid.uuid4().hex[:6]}",
                                          "timezone": "Europe/Berlin", "currencyCode": "EUR"})
    assert created.status_code == 201, created.text
    clock.advance(seconds=30)
    outbox = api.get(HEALTH).json["checks"]["outbox"]
    assert outbox["backlog"] >= 1
    # the fixed clock starts up to a second before the row was written (microseconds cut)
    assert outbox["oldest_unpublished_age_s"] >= 25


def test_outbox_backlog_and_oldest_age_leave_parked_rows_out_and_count_them_apart(api, ctx):
    """A parked row waits for an operator's replay, not for the relay: in the backlog (or as
    the oldest unpublished row) it would show a lag that never drains."""
    created = api.post("/v1/properties", {"propertyCode": f"H{uuid.uuid4().hex[:6]}",
                                          "timezone": "Europe/Berlin", "currencyCode": "EUR"})
    assert created.status_code == 201, created.text
    subject = created.json["id"]
    ancient = datetime(2000, 1, 1, tzinfo=UTC)
    twenty_years = 20 * 365 * 86400  # every other row of the test database is younger
    mine = OutboxEvent.subject == subject
    with unit_of_work(ctx):  # the property's event becomes the oldest unpublished row
        assert OutboxEvent.update(created_at=ancient).where(mine).execute() == 1
    waiting = api.get(HEALTH).json["checks"]["outbox"]
    assert waiting["oldest_unpublished_age_s"] > twenty_years

    with unit_of_work(ctx):  # what the relay does after the last attempt
        OutboxEvent.update(parked_at=datetime.now(UTC), attempts=10).where(mine).execute()
    parked = api.get(HEALTH).json["checks"]["outbox"]
    assert parked["backlog"] == waiting["backlog"] - 1
    assert parked["parked"] == waiting["parked"] + 1
    age = parked["oldest_unpublished_age_s"]
    assert age is None or age < twenty_years


def test_health_needs_a_token_and_the_health_read_scope(api):
    assert_problem(api.get(HEALTH, raw_headers={"X-Platform-Env-Id": str(api.env_id)}), 401)
    token = mint_token(api.settings, env_id=api.env_id, scopes=["hotel:pms:properties:read"])
    assert_problem(api.get(HEALTH, token=token), 403, "missing_scope")
    token = mint_token(api.settings, env_id=api.env_id, scopes=["hotel:pms:health:read"])
    assert api.get(HEALTH, token=token).status_code == 200


def test_an_unreachable_broker_is_reported_not_raised(settings, database, clock, env_id):
    app = create_app(settings.with_(broker_url="amqp://guest:guest@127.0.0.1:1/%2F"),
                     db=database, clock=clock)
    client = falcon.testing.TestClient(app)
    headers = {"Authorization": f"Bearer {mint_token(settings, env_id=env_id)}",
               "X-Platform-Env-Id": str(env_id)}
    resp = client.simulate_get(HEALTH, headers=headers)
    assert resp.status_code == 200
    assert resp.json["checks"]["broker"]["ok"] is False
    assert resp.json["checks"]["database"]["ok"] is True


@pytest.fixture
def draining_client(settings, database, clock, env_id):  # noqa: ANN001, ANN201
    gauge = LocalInflight()
    app = create_app(settings, db=database, clock=clock, inflight=gauge)
    headers = {"Authorization": f"Bearer {mint_token(settings, env_id=env_id)}",
               "X-Platform-Env-Id": str(env_id)}
    return falcon.testing.TestClient(app, headers=headers), gauge


def test_while_draining_health_answers_503_with_the_payload(draining_client):
    client, gauge = draining_client
    assert client.simulate_get(HEALTH).json["status"] == "ok"
    gauge.start_draining()
    resp = client.simulate_get(HEALTH)
    assert resp.status_code == 503
    assert resp.json["status"] == "draining"
    assert {"in_flight", "limits", "version", "checks"} <= set(resp.json)


def test_while_draining_new_requests_get_503_problem_with_retry_after(draining_client):
    client, gauge = draining_client
    gauge.start_draining()
    resp = client.simulate_get("/v1/properties")
    assert_problem(resp, 503, "draining")
    assert int(resp.headers["Retry-After"]) >= 1
    resp = client.simulate_post("/v1/properties", json={"propertyCode": "NOPE1"})
    assert_problem(resp, 503, "draining")
    assert gauge.total() == 0  # refused requests are never counted in flight


def test_in_flight_returns_to_zero_after_requests(draining_client):
    client, gauge = draining_client
    for _ in range(3):
        client.simulate_get("/v1/properties")
    client.simulate_get("/v1/properties/not-a-uuid")
    assert gauge.total() == 0


def test_health_keeps_its_payload_when_the_policy_read_fails(api, monkeypatch):
    """The policies are read from the database; when that read fails (the database in
    trouble) every gated route fails, but health stays outside policy evaluation and still
    reports its gauges."""
    import peewee

    from pms.services.admin.policies import PDP

    def broken(*_args, **_kwargs):
        raise peewee.OperationalError("the policy read failed")

    monkeypatch.setattr(PDP, "snapshot", broken)
    monkeypatch.setattr(PDP, "_riding", lambda *_a, **_k: None)  # no cached rules either
    control = api.get("/v1/properties")
    assert control.status_code >= 500, control.text  # the read failing does bite
    resp = api.get(HEALTH)
    assert resp.status_code == 200, resp.text
    assert set(resp.json) == {"status", "in_flight", "limits", "version", "checks"}
    assert resp.json["checks"]["database"]["ok"] is True
