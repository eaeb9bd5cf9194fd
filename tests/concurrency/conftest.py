"""A real gunicorn server on the per-run PostgreSQL database, for tests that fire parallel HTTP
requests. `start_server(...)` is reusable: pass extra environment (e.g. the TEST-ONLY
PMS_TEST_DISABLE_LOCKING=1 of the control runs) to get a differently configured instance.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from threading import Barrier
from typing import Any

import pytest
import requests

from pms.config import Settings
from pms.devkeys import mint_token

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    base_url: str
    settings: Settings
    proc: subprocess.Popen[bytes]
    log_path: Path
    sessions: dict[int, requests.Session] = field(default_factory=dict)

    def headers(self, env_id: uuid.UUID, **extra: str) -> dict[str, str]:
        token = mint_token(self.settings, env_id=env_id)
        return {"Authorization": f"Bearer {token}", "X-Platform-Env-Id": str(env_id), **extra}

    def stop(self) -> None:
        """Teardown: a graceful stop without the drain, as tests/ops/conftest.py's `Gunicorn.stop`
        (a second SIGTERM skips the PMS_DRAIN_SECONDS wait; no test here exercises the drain,
        and these servers are stopped only once their requests have been answered)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def start_server(pg_database: Any, settings: Settings, tmp: Path, *, workers: int = 4,
                 extra_env: dict[str, str] | None = None) -> Server:
    port = free_port()
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("PMS_TEST_")}
    env = {**inherited, "PMS_DATABASE_URL": pg_database.app_url,
           "PMS_MIGRATION_DATABASE_URL": pg_database.owner_url,
           "PMS_JWKS_URL": settings.jwks_url, "PORT": str(port),
           "PMS_PLATFORM_URL": "embedded",  # explicit, no fallback on PostgreSQL
           "WEB_CONCURRENCY": str(workers), "PMS_LOG_LEVEL": "WARNING",
           "PMS_EMBEDDED_RUNTIME": "0",
           **(extra_env or {})}
    log_path = tmp / f"gunicorn-{port}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "python:pms.gunicorn_conf",
         "--bind", f"127.0.0.1:{port}", "pms.app:get_app()"],
        cwd=ROOT, env=env, stdout=log_path.open("wb"), stderr=subprocess.STDOUT)
    server = Server(f"http://127.0.0.1:{port}", settings, proc, log_path)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited: {server.log_tail()}")
        try:
            requests.get(server.base_url + "/v1/openapi.json", timeout=5)
            return server
        except requests.RequestException:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"gunicorn did not start: {server.log_tail()}")


@pytest.fixture(scope="session")
def pms_server(pg_database: Any, base_settings: Settings,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The service under gunicorn (4 workers) on the per-run PostgreSQL database."""
    server = start_server(pg_database, base_settings, tmp_path_factory.mktemp("gunicorn"))
    yield server
    server.stop()


def fire(n: int, send: Any, *, pool: int | None = None) -> list[Any]:
    """Call `send(i, session)` from n threads released together by a barrier."""
    size = pool or n
    barrier = Barrier(min(size, n), timeout=120)
    sessions = [requests.Session() for _ in range(size)]

    def one(i: int) -> Any:
        if i < size:
            try:
                barrier.wait(timeout=30)
            except Exception:  # noqa: BLE001 - a broken barrier only loses the alignment
                pass
        return send(i, sessions[i % size])

    with ThreadPoolExecutor(max_workers=size) as ex:
        results = list(ex.map(one, range(n)))
    for s in sessions:
        s.close()
    return results


def altered_database(session_db: Any, prefix: str, *statements: str) -> Iterator[Any]:
    """CONTROL databases: a fresh migrated database, `statements` run on it as the owner (a
    constraint or key dropped), bound for the test, then the session's database `session_db`
    again. Use as a fixture body: `yield from altered_database(_pg_db, "pmsx", "ALTER ...")`."""
    import psycopg2

    from bench import throwaway
    from pms.db.database import db as db_proxy
    from pms.db.database import make_database
    from pms.db.migrator import migrate
    from tests import pg

    database = throwaway.create(pg.admin_url(), prefix)
    try:
        migrate(database.owner_url, service_url=database.app_url)
        conn = psycopg2.connect(database.owner_url)
        with conn, conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
        conn.close()
        bound = make_database(database.app_url, pool_size=16)
        db_proxy.initialize(bound)
        yield bound
        bound.close_all()
    finally:
        db_proxy.initialize(session_db)  # the session's database again
        database.drop()
