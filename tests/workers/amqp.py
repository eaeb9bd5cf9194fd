"""Real-RabbitMQ helpers for the worker tests: a throwaway topic exchange with test queues, and a
TCP proxy in front of the broker that a test can cut or stall without touching the server."""

from __future__ import annotations

import json
import os
import select
import socket
import threading
import uuid
from typing import Any
from urllib.parse import urlparse, urlunparse

import pika

DEFAULT_AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"


def amqp_url() -> str:
    return os.environ.get("PMS_TEST_AMQP_URL", DEFAULT_AMQP_URL)


def available() -> tuple[bool, str]:
    parsed = urlparse(amqp_url())
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 5672), 2):
            return True, ""
    except OSError as exc:
        return False, str(exc)


def via(url: str, port: int) -> str:
    parsed = urlparse(url)
    auth = parsed.netloc.rsplit("@", 1)[0] + "@" if "@" in parsed.netloc else ""
    return urlunparse(parsed._replace(netloc=f"{auth}127.0.0.1:{port}"))


class Bus:
    """A unique durable topic exchange plus queues a test binds, reads and removes."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.exchange = f"pms-test-{uuid.uuid4().hex[:10]}"
        self.conn = pika.BlockingConnection(pika.URLParameters(url))
        self.ch = self.conn.channel()
        self.ch.exchange_declare(self.exchange, exchange_type="topic", durable=True)
        self.queues: list[str] = []

    def queue(self, key: str = "#") -> str:
        name = f"{self.exchange}-q{len(self.queues)}"
        self.ch.queue_declare(name, durable=True)
        self.ch.queue_bind(name, self.exchange, routing_key=key)
        self.queues.append(name)
        return name

    def bind(self, queue: str, key: str = "#") -> None:
        self.ch.queue_bind(queue, self.exchange, routing_key=key)

    def unbind(self, queue: str, key: str = "#") -> None:
        self.ch.queue_unbind(queue, self.exchange, routing_key=key)

    def drain(self, queue: str) -> list[tuple[Any, dict[str, Any]]]:
        """Every message now in `queue`, acked: (properties, CloudEvent)."""
        out = []
        while True:
            method, props, body = self.ch.basic_get(queue, auto_ack=True)
            if method is None:
                return out
            out.append((props, json.loads(body)))

    def close(self) -> None:
        try:
            for name in self.queues:
                self.ch.queue_delete(name)
            self.ch.exchange_delete(self.exchange)
            self.conn.close()
        except Exception:  # noqa: BLE001 - best-effort cleanup
            pass


class TcpProxy:
    """127.0.0.1:<port> -> the broker. `cut()` drops every connection and refuses new ones;
    `stall()` keeps connections but forwards nothing; `restore()` goes back to normal."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]
        self.mode = "up"
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self.server.settimeout(0.2)
        while not self._stop.is_set():
            try:
                client, _ = self.server.accept()
            except (TimeoutError, OSError):
                continue
            if self.mode == "down":
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=3)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        sockets = [a, b]
        try:
            while not self._stop.is_set():
                if self.mode == "stall":
                    self._stop.wait(0.05)
                    continue
                readable, _, _ = select.select(sockets, [], [], 0.1)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data or not self._forward(sock is a, data, a, b):
                        return
        except (OSError, ValueError):
            # cut() closed the pair under us: select() on a closed socket raises ValueError
            # ("file descriptor cannot be a negative integer"), recv/send an OSError
            return
        finally:
            for sock in sockets:
                try:
                    sock.close()
                except OSError:
                    pass

    def _forward(self, from_client: bool, data: bytes, a: socket.socket,
                 b: socket.socket) -> bool:
        """Pass one chunk on (a: client, b: server); False ends the pair (a subclass's cut)."""
        (b if from_client else a).sendall(data)
        return True

    def cut(self) -> None:
        self.mode = "down"
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for a, b in pairs:
            for sock in (a, b):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                    sock.close()
                except OSError:
                    pass

    def stall(self) -> None:
        self.mode = "stall"

    def restore(self) -> None:
        self.mode = "up"

    def close(self) -> None:
        self._stop.set()
        self.cut()
        self.server.close()
