"""The instance-wide in-flight gauge (pms/api/inflight.py): per-worker slots in one shared file
summed by any reader, the draining flag, slot clearing when a worker dies, and the fallback to a
process-local gauge outside gunicorn."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from pms.api import inflight


def _hold(path: str, slot: int, count: int, ready, release) -> None:  # noqa: ANN001
    gauge = inflight.SharedInflight(path, slot)
    for _ in range(count):
        gauge.enter()
    ready.set()
    release.wait(10)
    for _ in range(count):
        gauge.leave()


def test_every_process_sees_the_sum_over_all_slots(tmp_path: Path):
    path = str(tmp_path / "inflight")
    inflight.create_shared_file(path)
    ctx = multiprocessing.get_context("fork")
    release = ctx.Event()
    readies = [ctx.Event() for _ in range(2)]
    procs = [ctx.Process(target=_hold, args=(path, slot, count, ready, release))
             for slot, count, ready in ((1, 2, readies[0]), (2, 3, readies[1]))]
    for proc in procs:
        proc.start()
    try:
        assert all(ready.wait(10) for ready in readies)
        mine = inflight.SharedInflight(path, 3)
        mine.enter()
        assert mine.total() == 6
        assert inflight.read_total(path) == 6
        mine.leave()
    finally:
        release.set()
        for proc in procs:
            proc.join(10)
    assert inflight.read_total(path) == 0


def test_the_draining_flag_is_seen_by_every_worker(tmp_path: Path):
    path = str(tmp_path / "inflight")
    inflight.create_shared_file(path)
    workers = [inflight.SharedInflight(path, slot) for slot in (1, 2)]
    assert not any(w.draining() for w in workers)
    inflight.set_flag(path, 1)
    assert all(w.draining() for w in workers)


def test_a_dead_workers_slot_is_cleared(tmp_path: Path):
    path = str(tmp_path / "inflight")
    inflight.create_shared_file(path)
    gauge = inflight.SharedInflight(path, 5)
    gauge.enter()
    gauge.enter()
    assert inflight.read_total(path) == 2
    inflight.clear_slot(path, 5)  # what child_exit does for a worker that died mid-request
    assert inflight.read_total(path) == 0


def test_slot_zero_is_reserved_for_the_flag(tmp_path: Path):
    path = str(tmp_path / "inflight")
    inflight.create_shared_file(path)
    with pytest.raises(ValueError):
        inflight.SharedInflight(path, 0)
    with pytest.raises(ValueError):
        inflight.SharedInflight(path, inflight.MAX_SLOTS)


def test_outside_gunicorn_the_gauge_is_process_local(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("PMS_INFLIGHT_FILE", raising=False)
    monkeypatch.delenv("PMS_INFLIGHT_SLOT", raising=False)
    gauge = inflight.from_environment()
    assert isinstance(gauge, inflight.LocalInflight)
    gauge.enter()
    assert gauge.total() == 1
    gauge.leave()
    assert gauge.total() == 0 and not gauge.draining()


def _client(path: str, settings, database, clock, env_id):  # noqa: ANN001, ANN202
    import falcon.testing

    from pms.app import create_app
    from pms.devkeys import mint_token

    app = create_app(settings, db=database, clock=clock,
                     inflight=inflight.SharedInflight(path, 1))
    headers = {"Authorization": f"Bearer {mint_token(settings, env_id=env_id)}",
               "X-Platform-Env-Id": str(env_id)}
    return falcon.testing.TestClient(app, headers=headers)


def test_draining_lowers_readiness_but_requests_are_still_served(
        tmp_path: Path, base_settings, sqlite_db, clock, env_id):  # noqa: ANN001
    # the load balancer has not noticed yet: refusing now would fail clients that never retry
    path = str(tmp_path / "inflight")
    inflight.create_shared_file(path)
    client = _client(path, base_settings, sqlite_db, clock, env_id)
    inflight.set_flag(path, inflight.DRAINING)
    health = client.simulate_get("/v1/health")
    assert health.status_code == 503 and health.json["status"] == "draining"
    assert client.simulate_get("/v1/properties").status_code == 200


def test_once_stopping_new_requests_are_refused_with_a_retryable_503(
        tmp_path: Path, base_settings, sqlite_db, clock, env_id):  # noqa: ANN001
    path = str(tmp_path / "inflight")
    inflight.create_shared_file(path)
    client = _client(path, base_settings, sqlite_db, clock, env_id)
    inflight.set_flag(path, inflight.STOPPING)
    resp = client.simulate_get("/v1/properties")
    assert resp.status_code == 503 and resp.json["code"] == "draining"
    assert int(resp.headers["Retry-After"]) >= 1
    assert client.simulate_get("/v1/health").json["status"] == "draining"
    assert inflight.read_total(path) == 0  # refused requests are never counted in flight
