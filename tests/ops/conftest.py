"""Real gunicorn instances for the operations tests: `gunicorn` starts one with the project's
settings (`pms.gunicorn_conf`) on the per-run PostgreSQL database (the Procfile's `web` command
as written, with PORT and the given environment); `row_lock` holds a property's row lock from a
superuser connection so that writes to it stay in flight until released. `restart()` starts an
instance again on its port, as a rolling deploy does."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg2
import pytest
import requests

from pms.config import Settings
from pms.devkeys import mint_token
from tests import pg

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def procfile_command(name: str) -> list[str]:
    """A Procfile process's command line, split as a shell would."""
    for line in (ROOT / "Procfile").read_text().splitlines():
        key, _, command = line.partition(":")
        if key.strip() == name:
            return shlex.split(command.strip())
    raise LookupError(f"no {name!r} process in the Procfile")


class Gunicorn:
    """One gunicorn master (and its workers) in a subprocess, started by the Procfile's `web`
    command with the virtualenv's bin first on PATH."""

    def __init__(self, settings: Settings, database: Any, log_dir: Path,
                 env: dict[str, str] | None = None, *, port: int | None = None) -> None:
        self.settings = settings
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / f"gunicorn-{self.port}.log"
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("PMS_")}
        bin_dir = str(Path(sys.executable).parent)
        self.env = {**inherited, "PMS_DATABASE_URL": database.app_url,
                    "PMS_MIGRATION_DATABASE_URL": database.owner_url,
                    "PMS_JWKS_URL": settings.jwks_url, "PMS_LOG_LEVEL": "WARNING",
                    # no sandbox fallback on PostgreSQL; the tests ask for it
                    "PMS_PLATFORM_URL": "embedded",
                    "PMS_EMBEDDED_RUNTIME": "0",
                    "PATH": bin_dir + os.pathsep + inherited.get("PATH", ""),
                    "PORT": str(self.port), **(env or {})}
        self._log = self.log_path.open("ab")
        self.proc = self._spawn()

    def _spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(procfile_command("web"), cwd=ROOT, env=self.env,
                                stdout=self._log, stderr=subprocess.STDOUT)

    def restart(self) -> None:
        """Start again on the same port once the previous master has exited."""
        if self.proc.poll() is None:
            raise RuntimeError("the previous master is still running")
        self.proc = self._spawn()

    def headers(self, env_id: uuid.UUID, **extra: str) -> dict[str, str]:
        token = mint_token(self.settings, env_id=env_id)
        return {"Authorization": f"Bearer {token}", "X-Platform-Env-Id": str(env_id), **extra}

    def wait_ready(self, env_id: uuid.UUID, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"gunicorn exited early:\n{self.log_tail()}")
            try:
                if requests.get(self.base_url + "/v1/health", headers=self.headers(env_id),
                                timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        pytest.fail(f"gunicorn did not become ready:\n{self.log_tail()}")

    def health(self, env_id: uuid.UUID) -> requests.Response:
        return requests.get(self.base_url + "/v1/health", headers=self.headers(env_id), timeout=5)

    def terminate(self) -> None:
        self.proc.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        """Teardown: a graceful stop without the drain (a second SIGTERM skips it; the drain
        itself is what the deploy tests exercise through `terminate`)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._log.close()

    def log_tail(self, lines: int = 40) -> str:
        self._log.flush()
        text = self.log_path.read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])


@pytest.fixture
def gunicorn(pg_database: pg.PgDatabase, base_settings: Settings,
             tmp_path: Path) -> Iterator[Callable[..., Gunicorn]]:
    """A factory: `gunicorn(env={...})` starts an instance, stopped at teardown."""
    started: list[Gunicorn] = []

    def start(env: dict[str, str] | None = None, *, ready_env: uuid.UUID | None = None
              ) -> Gunicorn:
        server = Gunicorn(base_settings, pg_database, tmp_path, env)
        started.append(server)
        server.wait_ready(ready_env or uuid.uuid4())
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def row_lock(pg_database: pg.PgDatabase) -> Callable[[str, uuid.UUID, uuid.UUID], Any]:
    """`with row_lock("property", id, env_id):` holds FOR UPDATE on that row, connected as the
    service role inside the row's env (RLS applies to every role the suite may have)."""

    @contextmanager
    def hold(table: str, row_id: uuid.UUID, env_id: uuid.UUID) -> Iterator[None]:
        conn = psycopg2.connect(pg_database.app_url)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT set_config('app.env_id', %s, true)", (str(env_id),))
                cur.execute(f'SELECT 1 FROM "{table}" WHERE id = %s FOR UPDATE', (str(row_id),))
                assert cur.fetchone() is not None, "nothing to lock"
            yield
        finally:
            conn.rollback()
            conn.close()

    return hold
