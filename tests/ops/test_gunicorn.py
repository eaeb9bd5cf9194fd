"""The `web` process under real gunicorn: in-flight requests summed over worker processes,
draining after SIGTERM (readiness first and still serving, then stop and finish what is in
flight), budgets that nest, the underscore header dropped, and one control socket per instance.

Requests are held in flight by a row lock the test takes on the property they update."""

from __future__ import annotations

import http.client
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from pms.api import inflight

pytestmark = pytest.mark.postgres


def _create_property(server, env_id: uuid.UUID) -> str:  # noqa: ANN001
    resp = requests.post(server.base_url + "/v1/properties", headers=server.headers(env_id),
                         json={"propertyCode": f"OPS{uuid.uuid4().hex[:6]}",
                               "timezone": "Europe/Berlin", "currencyCode": "EUR"}, timeout=10)
    assert resp.status_code == 201, resp.text
    return resp.json()["id"]


def _put_name(server, env_id: uuid.UUID, property_id: str, name: str) -> requests.Response:  # noqa: ANN001
    return requests.put(f"{server.base_url}/v1/properties/{property_id}",
                        headers=server.headers(env_id), json={"name": name}, timeout=20)


def _wait_for(predicate, timeout_s: float = 5.0, every: float = 0.05):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(every)
    return last


def test_in_flight_is_summed_over_every_worker_process(gunicorn, row_lock):
    # Given sync workers (one request per process at a time; gunicorn turns a sync worker with
    # more than one thread into gthread, so one thread) and three writes held by a row lock
    server = gunicorn({"WEB_CONCURRENCY": "4", "PMS_WORKER_CLASS": "sync", "PMS_THREADS": "1"})
    env_id = uuid.uuid4()
    property_id = _create_property(server, env_id)
    with ThreadPoolExecutor(3) as pool, row_lock("property", uuid.UUID(property_id), env_id):
        held = [pool.submit(_put_name, server, env_id, property_id, f"held {i}") for i in range(3)]
        # When the fourth worker answers health
        body = _wait_for(lambda: (lambda r: r.json() if r.json()["in_flight"] >= 3 else None)(
            server.health(env_id)))
        # Then the three requests held in three other processes are counted
        assert body and body["in_flight"] >= 3, body
        assert body["status"] == "ok"
    assert [f.result().status_code for f in held] == [200, 200, 200]
    assert _wait_for(lambda: server.health(env_id).json()["in_flight"] <= 1)


def test_sigterm_lowers_readiness_first_and_keeps_serving_for_the_drain_time(gunicorn):
    # Readiness first, then stop: the load balancer needs its check interval x fall to notice
    drain_s = 6.0
    server = gunicorn({"WEB_CONCURRENCY": "2", "PMS_DRAIN_SECONDS": str(drain_s)})
    env_id = uuid.uuid4()
    property_id = _create_property(server, env_id)
    sent = time.monotonic()
    server.terminate()

    # health answers 503 draining with the full payload
    body = _wait_for(lambda: (lambda r: r.json() if r.status_code == 503 else None)(
        server.health(env_id)))
    assert body is not None and body["status"] == "draining"
    assert {"in_flight", "limits", "version", "checks"} <= set(body)
    # while new work on a new connection is still served as usual
    served = requests.get(f"{server.base_url}/v1/properties/{property_id}",
                          headers=server.headers(env_id), timeout=5)
    assert time.monotonic() - sent < drain_s, "too slow to observe the drain window"
    assert served.status_code == 200, served.text

    # then the instance stops accepting, no earlier than the drain time, and exits cleanly
    def refused() -> bool:
        try:
            server.health(env_id)
            return False
        except requests.ConnectionError:
            return True

    assert _wait_for(refused, timeout_s=drain_s + 20, every=0.1)
    assert time.monotonic() - sent >= drain_s - 0.5
    assert server.proc.wait(timeout=20) == 0


def test_sigterm_finishes_in_flight_requests_after_it_stops_accepting(gunicorn, row_lock):
    server = gunicorn({"WEB_CONCURRENCY": "2", "PMS_THREADS": "4", "PMS_DRAIN_SECONDS": "0"})
    env_id = uuid.uuid4()
    property_id = _create_property(server, env_id)
    flag_file = f"/dev/shm/pms-inflight-{server.proc.pid}"
    with ThreadPoolExecutor(2) as pool, row_lock("property", uuid.UUID(property_id), env_id):
        held = [pool.submit(_put_name, server, env_id, property_id, f"drain {i}")
                for i in range(2)]
        assert _wait_for(lambda: server.health(env_id).json()["in_flight"] >= 3)

        # When the master gets SIGTERM (no drain time) it goes to the stopping phase at once
        server.terminate()
        assert _wait_for(lambda: _flag(flag_file) == inflight.STOPPING, timeout_s=10)
        time.sleep(0.2)  # not a correctness wait: gives a premature exit the chance to show
        assert server.proc.poll() is None, "the master must wait for the in-flight requests"
    # When the lock goes, the held requests finish normally
    assert [f.result().status_code for f in held] == [200, 200]
    # and the master exits cleanly soon after
    assert server.proc.wait(timeout=15) == 0


def _flag(path: str) -> int | None:
    try:
        with open(path, "rb") as handle:
            return inflight.SLOT.unpack(handle.read(inflight.SLOT.size))[0]
    except OSError:
        return None


def test_shutdown_budgets_nest_inside_the_orchestrator_grace(monkeypatch):
    # balancer detection < drain time < graceful_timeout (counted from SIGTERM) < 30 s grace
    from pms import gunicorn_conf
    from tests.ops.haproxy import Checks

    production_checks = Checks(inter_ms=2000, fall=2, timeout_ms=2000)  # README's haproxy.cfg
    detection_s = (production_checks.inter_ms * production_checks.fall
                   + production_checks.timeout_ms) / 1000
    assert detection_s < gunicorn_conf.DEFAULT_DRAIN_S < gunicorn_conf.graceful_timeout < 30
    # a drain time too long for the budget is cut so in-flight requests keep 5 s
    budget = float(gunicorn_conf.graceful_timeout)
    monkeypatch.setenv("PMS_DRAIN_SECONDS", "60")
    assert gunicorn_conf._drain_seconds(budget) == budget - 5


def test_underscore_spelling_of_the_tenant_header_is_dropped_over_http(gunicorn):
    server = gunicorn()
    env_id, other_env = uuid.uuid4(), uuid.uuid4()
    token = server.headers(env_id)["Authorization"]

    def get(headers: dict[str, str]) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        conn.putrequest("GET", "/v1/health")
        for key, value in headers.items():
            conn.putheader(key, value)
        conn.endheaders()
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, data

    # Only the underscore spelling: gunicorn drops it, so the tenant header is missing -> 400
    status, data = get({"Authorization": token, "X-Platform_Env-Id": str(env_id)})
    assert status == 400 and b"missing_tenant" in data
    # The right header plus an underscore one naming another env: the impostor never wins
    status, _ = get({"Authorization": token, "X-Platform-Env-Id": str(env_id),
                     "X-Platform_Env-Id": str(other_env)})
    assert status == 200
    status, data = get({"Authorization": token, "X-Platform_Env-Id": str(env_id),
                        "X-Platform-Env-Id": str(other_env)})
    assert status == 403 and b"tenant_mismatch" in data


def test_each_instance_has_its_own_control_socket(gunicorn, tmp_path: Path):
    runtime = tmp_path / "run"
    runtime.mkdir()
    first = gunicorn({"XDG_RUNTIME_DIR": str(runtime)})
    second = gunicorn({"XDG_RUNTIME_DIR": str(runtime)})
    paths = [runtime / f"pms-gunicorn-{s.proc.pid}.ctl" for s in (first, second)]
    assert _wait_for(lambda: all(p.exists() for p in paths)), sorted(os.listdir(runtime))
    assert not (runtime / "gunicorn.ctl").exists()
    # Stopping one leaves the other's socket in place
    first.stop()
    assert not paths[0].exists()
    assert paths[1].exists()
