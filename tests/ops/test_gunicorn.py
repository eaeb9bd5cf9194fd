"""The `web` process under real gunicorn: in-flight requests summed over worker processes,
draining after SIGTERM, the underscore header dropped, and one control socket per instance.

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


def test_sigterm_drains_in_flight_requests_then_the_master_exits(gunicorn, row_lock):
    server = gunicorn({"WEB_CONCURRENCY": "2", "PMS_THREADS": "4", "PMS_DRAIN_SECONDS": "20"})
    env_id = uuid.uuid4()
    property_id = _create_property(server, env_id)
    with ThreadPoolExecutor(2) as pool, row_lock("property", uuid.UUID(property_id), env_id):
        held = [pool.submit(_put_name, server, env_id, property_id, f"drain {i}")
                for i in range(2)]
        assert _wait_for(lambda: server.health(env_id).json()["in_flight"] >= 3)

        # When the master gets SIGTERM
        server.terminate()

        # Then health answers 503 draining with the full payload, still counting the held ones
        # (a Response is falsy when not ok, so wait on its parsed body)
        body = _wait_for(lambda: (lambda r: r.json() if r.status_code == 503 else None)(
            server.health(env_id)))
        assert body is not None
        assert body["status"] == "draining" and body["in_flight"] >= 3
        assert {"limits", "version", "checks"} <= set(body)
        # and new work is refused with problem+json and Retry-After
        refused = requests.get(f"{server.base_url}/v1/properties/{property_id}",
                               headers=server.headers(env_id), timeout=5)
        assert refused.status_code == 503
        assert refused.headers["Content-Type"].startswith("application/problem+json")
        assert refused.json()["code"] == "draining"
        assert int(refused.headers["Retry-After"]) >= 1
        assert server.proc.poll() is None, "the master must wait for the in-flight requests"
    # When the lock goes, the held requests finish normally
    assert [f.result().status_code for f in held] == [200, 200]
    # and the master exits cleanly soon after
    assert server.proc.wait(timeout=15) == 0


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
