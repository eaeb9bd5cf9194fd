"""Hostile HTTP through a real gunicorn (pms.gunicorn_conf), spoken over raw sockets so that the
framing is exactly what a client sends: chunked bodies are read (and refused over 1 MiB without
being read whole), a refused body never leaves a kept-alive connection that silently drops the
next request, and an over-long URL or header gets problem+json, not gunicorn's HTML.
"""

from __future__ import annotations

import json
import socket
import uuid
from typing import Any

import pytest

pytestmark = pytest.mark.postgres

MiB = 1024 * 1024


class Raw:
    """One client connection: send bytes, read one HTTP/1.1 response at a time."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=15)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        self.buf += chunk
        return bool(chunk)

    def response(self) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                raise ConnectionError(f"closed before a response: {self.buf[:200]!r}")
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {k.strip().lower(): v.strip() for k, v in
                   (line.split(":", 1) for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(self.buf) < length:
            if not self._fill():
                break
        body, self.buf = self.buf[:length], self.buf[length:]
        return status, headers, body

    def closed_by_server(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, TimeoutError):
            return False

    def close(self) -> None:
        self.sock.close()


def _head(server: Any, env_id: uuid.UUID, method: str, target: str, **extra: str) -> bytes:
    headers = {"Host": "127.0.0.1", **server.headers(env_id), **extra}
    lines = [f"{method} {target} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _chunked(data: bytes, size: int = 64 * 1024) -> bytes:
    parts = [f"{len(data[i:i + size]):x}\r\n".encode() + data[i:i + size] + b"\r\n"
             for i in range(0, len(data), size)]
    return b"".join(parts) + b"0\r\n\r\n"


def _property(code: str) -> bytes:
    return json.dumps({"propertyCode": code, "timezone": "UTC", "currencyCode": "EUR"}).encode()


def _problem(status: int, headers: dict[str, str], body: bytes, expected: int, code: str) -> None:
    assert status == expected, (status, body[:300])
    assert headers["content-type"].startswith("application/problem+json"), headers
    assert json.loads(body)["code"] == code


@pytest.fixture
def server(gunicorn: Any) -> Any:
    return gunicorn({"WEB_CONCURRENCY": "1", "PMS_THREADS": "2"})


def test_chunked_request_body_is_read(server):
    env_id = uuid.uuid4()
    conn = Raw(server.port)
    try:
        conn.send(_head(server, env_id, "POST", "/v1/properties", **{
            "Content-Type": "application/json", "Transfer-Encoding": "chunked"})
            + _chunked(_property("CHUNK1"), size=7))
        status, _headers, body = conn.response()
        assert status == 201, body
        assert json.loads(body)["propertyCode"] == "CHUNK1"
    finally:
        conn.close()


def test_chunked_body_over_1_mib_is_413_without_reading_it_whole(server):
    env_id = uuid.uuid4()
    conn = Raw(server.port)
    try:
        conn.send(_head(server, env_id, "POST", "/v1/properties", **{
            "Content-Type": "application/json", "Transfer-Encoding": "chunked"}))
        # 1.25 MiB of a (would-be) 10 MB body, with no last chunk: the answer comes anyway,
        # so the server did not wait for, let alone buffer, the whole body.
        conn.send(_chunked(b"x" * (MiB + MiB // 4))[:-5])
        status, headers, body = conn.response()
        _problem(status, headers, body, 413, "payload_too_large")
        assert headers["connection"].lower() == "close"
    finally:
        conn.close()


def test_body_over_the_limit_is_413_and_the_connection_says_close(server):
    env_id = uuid.uuid4()
    conn = Raw(server.port)
    try:
        conn.send(_head(server, env_id, "POST", "/v1/properties", **{
            "Content-Type": "application/json", "Content-Length": str(2 * MiB)}))
        conn.send(b" " * (256 * 1024))  # part of the 2 MiB; the answer needs none of it
        status, headers, body = conn.response()
        _problem(status, headers, body, 413, "payload_too_large")
        # The client is told, so it sends its next request on a new connection ...
        assert headers["connection"].lower() == "close"
        assert conn.closed_by_server()
    finally:
        conn.close()
    # ... where it is answered.
    conn = Raw(server.port)
    try:
        body = _property("AFTER413")
        conn.send(_head(server, env_id, "POST", "/v1/properties", **{
            "Content-Type": "application/json", "Content-Length": str(len(body))}) + body)
        assert conn.response()[0] == 201
    finally:
        conn.close()


def test_two_requests_on_one_kept_alive_connection_are_both_answered(server):
    # The control: an ordinary body keeps the connection, and the next request is answered.
    env_id = uuid.uuid4()
    conn = Raw(server.port)
    try:
        for code in ("KEEP1", "KEEP2"):
            body = _property(code)
            conn.send(_head(server, env_id, "POST", "/v1/properties", **{
                "Content-Type": "application/json", "Content-Length": str(len(body))}) + body)
            status, headers, _ = conn.response()
            assert status == 201 and headers["connection"].lower() == "keep-alive"
        # a 422 that read its whole (small) body keeps the connection too
        bad = b'{"propertyCode": 1}'
        conn.send(_head(server, env_id, "POST", "/v1/properties", **{
            "Content-Type": "application/json", "Content-Length": str(len(bad))}) + bad)
        assert conn.response()[0] == 422
        conn.send(_head(server, env_id, "GET", "/v1/health"))
        assert conn.response()[0] == 200
    finally:
        conn.close()


def test_100_kb_bearer_token_is_431_problem_json(server):
    conn = Raw(server.port)
    try:
        conn.send(_head(server, uuid.uuid4(), "GET", "/v1/health",
                        Authorization="Bearer " + "a" * 100 * 1024))
        status, headers, body = conn.response()
        _problem(status, headers, body, 431, "header_too_large")
        assert json.loads(body)["header"] == "AUTHORIZATION"
    finally:
        conn.close()


def test_8_kb_url_is_414_problem_json(server):
    conn = Raw(server.port)
    try:
        conn.send(_head(server, uuid.uuid4(), "GET", "/v1/properties?cursor=" + "a" * 8 * 1024))
        status, headers, body = conn.response()
        _problem(status, headers, body, 414, "uri_too_long")
    finally:
        conn.close()


def test_a_header_over_gunicorns_field_limit_is_431_problem_json(server):
    """135 KB: over gunicorn's own 128 KiB field limit, so gunicorn answers before the app
: problem+json all the same."""
    conn = Raw(server.port)
    try:
        conn.send(_head(server, uuid.uuid4(), "GET", "/v1/health",
                        Authorization="Bearer " + "a" * 135 * 1000))
        status, headers, body = conn.response()
        _problem(status, headers, body, 431, "header_too_large")
        assert json.loads(body)["status"] == 431
    finally:
        conn.close()
