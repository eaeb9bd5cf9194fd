"""Run the Procfile's process types exactly as written, against a throwaway stack.

`procfile()` parses the Procfile; `Proc` starts one process type from its command line as
written (split like a shell would, nothing substituted but environment variables) in its own
session, so a test can SIGTERM it like an orchestrator or SIGKILL it with its children.
`Stack` is one throwaway PostgreSQL database migrated by `pms-cli db migrate` (the `release`
process) and one RabbitMQ vhost (Dramatiq's queue names are fixed, so a vhost keeps this
module's workers away from any other run's messages). `Counter` consumes the test's own queue.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter as Tally
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse, urlunparse

import pika

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
AUDIT_KEY = "audit.pms.recorded"  # pms.relay.audit_push.AUDIT_ROUTING_KEY


def procfile(path: Path = ROOT / "Procfile") -> dict[str, str]:
    """{process type: command} as written in the Procfile."""
    out = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, command = line.partition(":")
            out[name.strip()] = command.strip()
    return out


def wait_for(condition: Callable[[], Any], *, timeout: float, what: str,
             every: float = 0.1) -> Any:
    """Poll `condition` until it is truthy (generous deadlines: the machine is loaded)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


def rabbitmqctl(*args: str) -> None:
    subprocess.run(["rabbitmqctl", "-q", *args], check=True, capture_output=True, timeout=60)


def vhost_url(url: str, vhost: str) -> str:
    return urlunparse(urlparse(url)._replace(path="/" + quote(vhost, safe="")))


@dataclass
class Stack:
    """A migrated throwaway database and a RabbitMQ vhost shared by one test module."""

    database: Any
    amqp_url: str
    vhost: str
    logs: Path
    procs: list[Proc] = field(default_factory=list)

    def env(self, exchange: str, broker_url: str | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
            "PMS_DATABASE_URL": self.database.app_url,
            "PMS_MIGRATION_DATABASE_URL": self.database.owner_url,
            "PMS_BROKER_URL": broker_url or self.amqp_url,
            "PMS_EVENT_EXCHANGE": exchange,
            "PMS_PLATFORM_URL": "embedded",
            "PMS_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        })
        return env

    def start(self, name: str, env: dict[str, str]) -> Proc:
        proc = Proc(name, procfile()[name], env, self.logs)
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.procs:
            proc.kill()
        self.procs.clear()

    def admin(self) -> Any:
        from bench.throwaway import connect_admin

        return connect_admin(self.database.admin_url, self.database.name)

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        conn = self.admin()
        try:
            with conn.cursor() as cur:
                cur.execute(sql, args)
                return cur.fetchall()
        finally:
            conn.close()


class Proc:
    """One Procfile process type, started as written, in its own session."""

    _seq = 0

    def __init__(self, name: str, command: str, env: dict[str, str], logs: Path) -> None:
        Proc._seq += 1
        self.name = name
        self.command = command
        self.log = logs / f"{name}-{Proc._seq}.log"
        self.popen = subprocess.Popen(shlex.split(command), env=env, cwd=ROOT,
                                      stdout=self.log.open("wb"), stderr=subprocess.STDOUT,
                                      start_new_session=True)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def terminate(self, *, grace: float = 30.0) -> int:
        """SIGTERM to the main process (what an orchestrator does); the exit code, which must
        come within the orchestrator's grace."""
        self.popen.send_signal(signal.SIGTERM)
        return self.popen.wait(timeout=grace)

    def kill(self) -> None:
        """SIGKILL to the whole session (the process and its children)."""
        try:  # the children of a dead main process may still live
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class Counter:
    """The test's own queue, bound with '#' to the test's exchange, consumed by a thread:
    every event id (AMQP message_id) with how often it arrived, audit rows apart."""

    def __init__(self, url: str, exchange: str) -> None:
        self.url, self.exchange = url, exchange
        self.queue = f"{exchange}-count"
        self.events: Tally[str] = Tally()
        self.audits: Tally[str] = Tally()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise AssertionError(f"counter did not start: {self._error}")

    def _run(self) -> None:
        try:
            conn = pika.BlockingConnection(pika.URLParameters(self.url))
            ch = conn.channel()
            ch.exchange_declare(self.exchange, exchange_type="topic", durable=True)
            ch.queue_declare(self.queue, durable=True)
            ch.queue_bind(self.queue, self.exchange, routing_key="#")
            ch.basic_qos(prefetch_count=2000)

            def on_message(channel: Any, method: Any, props: Any, body: bytes) -> None:
                with self._lock:
                    target = self.audits if method.routing_key == AUDIT_KEY else self.events
                    target[props.message_id] += 1

            ch.basic_consume(self.queue, on_message, auto_ack=True)
            self._ready.set()
            while not self._stop.is_set():
                conn.process_data_events(time_limit=0.2)
            ch.queue_delete(self.queue)
            ch.exchange_delete(self.exchange)
            conn.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self._error = exc
            self._ready.set()

    def ids(self) -> set[str]:
        with self._lock:
            return set(self.events)

    def duplicates(self) -> int:
        with self._lock:
            return sum(n - 1 for n in self.events.values())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"
