"""The processes a simulation drives, started as the Procfile writes them.

PostgreSQL: a throwaway database migrated by the `release` line, the `web` line (gunicorn), the
`worker` and `relay` lines on a RabbitMQ vhost of the run's own, and a queue bound to the run's
event exchange from which the ARI projection is built (`bus_events`). SQLite (the embedded
default): the `web` line alone on a SQLite file, whose embedded runtime relays and runs jobs in
process, with the StubBroker.

`Store` reads the stored rows behind the service's back (the invariants' recounts) and, for the
controls, writes them.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import requests

from pms.config import Settings
from tests.e2e.procfile import ROOT, Proc, procfile, rabbitmqctl, unique, vhost_url

BIN = Path(sys.executable).parent


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Store:
    """Plain SQL on the stored rows of one env (PostgreSQL as the owner role with the tenant
    setting, so row-level security still limits it to the env; SQLite on the file)."""

    def __init__(self, kind: str, target: str, env_id: uuid.UUID) -> None:
        self.kind, self.target, self.env_id = kind, target, env_id
        self._conn: Any = None

    def _connect(self) -> Any:
        if self._conn is None:
            if self.kind == "postgres":
                import psycopg2

                self._conn = psycopg2.connect(self.target, connect_timeout=10)
                self._conn.autocommit = True
                with self._conn.cursor() as cur:
                    cur.execute("SELECT set_config('app.env_id', %s, false)", (str(self.env_id),))
            else:
                self._conn = sqlite3.connect(self.target, timeout=30, isolation_level=None)
        return self._conn

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """Rows of `sql` (placeholders `?`), limited to the env by the caller's WHERE env_id = ?."""
        conn = self._connect()
        if self.kind == "postgres":
            sql = sql.replace("?", "%s")
            with conn.cursor() as cur:
                cur.execute(sql, tuple(str(a) if isinstance(a, uuid.UUID) else a for a in args))
                return list(cur.fetchall()) if cur.description else []
        cur = conn.execute(sql, tuple(self._lite(a) for a in args))
        return list(cur.fetchall())

    def execute(self, sql: str, *args: Any) -> None:
        """A write behind the service's back (the controls only)."""
        self.query(sql, *args)

    @property
    def env(self) -> Any:
        """The env id as this database stores it."""
        return str(self.env_id) if self.kind == "postgres" else self._lite(self.env_id)

    @staticmethod
    def _lite(value: Any) -> Any:
        # peewee's UUIDField stores hex without dashes on SQLite
        return value.hex if isinstance(value, uuid.UUID) else value

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


@dataclass
class Stack:
    """The running processes of one simulation and how to reach them."""

    kind: str                      # "postgres" | "sqlite"
    base_url: str
    settings: Settings
    store_target: str
    logs: Path
    procs: list[Proc] = field(default_factory=list)
    bus: BusTap | None = None

    def store(self, env_id: uuid.UUID) -> Store:
        return Store(self.kind, self.store_target, env_id)

    def log_tails(self, lines: int = 25) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.tail(lines)}" for p in self.procs)

    def alive(self) -> list[str]:
        return [p.name for p in self.procs if not p.alive()]


class BusTap:
    """A queue of the run's own bound to its event exchange with `hotel.pms.#`: every event a
    domain consumer would see, in arrival order, read on demand."""

    def __init__(self, url: str, exchange: str) -> None:
        import pika

        self.url, self.exchange = url, exchange
        self.queue = f"{exchange}-sim"
        self._conn = pika.BlockingConnection(pika.URLParameters(url))
        self._ch = self._conn.channel()
        self._ch.exchange_declare(exchange, exchange_type="topic", durable=True)
        self._ch.queue_declare(self.queue, durable=True)
        self._ch.queue_bind(self.queue, exchange, routing_key="hotel.pms.#")
        self._lock = threading.Lock()

    def drain(self) -> list[dict[str, Any]]:
        out = []
        with self._lock:
            while True:
                method, _props, body = self._ch.basic_get(self.queue, auto_ack=True)
                if method is None:
                    break
                out.append(json.loads(body))
        return out

    def close(self) -> None:
        try:
            self._ch.queue_delete(self.queue)
            self._conn.close()
        except Exception:  # noqa: BLE001 - teardown of a broker that may be gone
            pass


def _wait_ready(base_url: str, procs: list[Proc], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in procs:
            if not proc.alive():
                raise AssertionError(f"{proc.name} exited early:\n{proc.tail(40)}")
        try:
            if requests.get(base_url + "/v1/openapi.json", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise AssertionError("the web process did not become ready:\n"
                         + "\n".join(p.tail(40) for p in procs))


def _base_env(settings: Settings, port: int) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("PMS_")}
    return {**inherited, "PATH": f"{BIN}{os.pathsep}{inherited.get('PATH', '')}",
            "PMS_JWKS_URL": settings.jwks_url, "PMS_LOG_LEVEL": "WARNING",
            "PMS_PLATFORM_URL": "embedded", "PORT": str(port), "PYTHONUNBUFFERED": "1",
            "PMS_HOME": str(settings.home)}


@contextmanager
def postgres_stack(settings: Settings, logs: Path, amqp_url: str) -> Iterator[Stack]:
    """web, worker and relay as the Procfile writes them, on a throwaway database and vhost."""
    from tests import pg

    database = pg.create_database("pmssim")
    vhost = unique("pms-sim")
    user = urlparse(amqp_url).username or "guest"
    rabbitmqctl("add_vhost", vhost)
    rabbitmqctl("set_permissions", "-p", vhost, user, ".*", ".*", ".*")
    broker = vhost_url(amqp_url, vhost)
    exchange = unique("pms-sim-events")
    port = free_port()
    env = {**_base_env(settings, port), "PMS_DATABASE_URL": database.app_url,
           "PMS_MIGRATION_DATABASE_URL": database.owner_url, "PMS_BROKER_URL": broker,
           "PMS_EVENT_EXCHANGE": exchange, "PMS_EMBEDDED_RUNTIME": "0",
           "WEB_CONCURRENCY": "2"}
    procs: list[Proc] = []
    tap: BusTap | None = None
    try:
        release = subprocess.run(shlex.split(procfile()["release"]), env=env, cwd=ROOT,
                                 capture_output=True, timeout=600)
        assert release.returncode == 0, release.stdout + release.stderr
        tap = BusTap(broker, exchange)
        for name in ("web", "worker", "relay"):
            procs.append(Proc(name, procfile()[name], env, logs))
        base_url = f"http://127.0.0.1:{port}"
        _wait_ready(base_url, procs)
        yield Stack("postgres", base_url, settings, database.owner_url, logs, procs, tap)
    finally:
        for proc in procs:
            proc.kill()
        if tap is not None:
            tap.close()
        try:
            rabbitmqctl("delete_vhost", vhost)
        except Exception:  # noqa: BLE001 - best effort
            pass
        database.drop()


@contextmanager
def sqlite_stack(settings: Settings, logs: Path) -> Iterator[Stack]:
    """The web line alone on a fresh SQLite file: the embedded default, runtime in process."""
    from pms.db.migrator import migrate

    path = logs / f"sim-{uuid.uuid4().hex[:8]}.db"
    url = f"sqlite:///{path}"
    migrate(url)
    port = free_port()
    env = {**_base_env(settings, port), "PMS_DATABASE_URL": url,
           "PMS_MIGRATION_DATABASE_URL": url, "WEB_CONCURRENCY": "2"}
    procs = [Proc("web", procfile()["web"], env, logs)]
    try:
        base_url = f"http://127.0.0.1:{port}"
        _wait_ready(base_url, procs)
        yield Stack("sqlite", base_url, settings, str(path), logs, procs, None)
    finally:
        for proc in procs:
            proc.kill()
