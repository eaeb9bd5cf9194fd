"""The object-storage client of production (`PMS_PLATFORM_URL` set): objects go through the
gateway (`/proxy/storage/v1/objects/{key}`) with a machine token and their checksum; an outage
is StorageUnavailable (503). A real HTTP server on 127.0.0.1 in a thread plays the gateway."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pms.config import Settings
from pms.platform import storage


class FakeStorageGateway:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.down = False
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: bytes = b"") -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802 - the token endpoint
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._answer(200, json.dumps({"access_token": "machine-token",
                                              "expires_in": 300}).encode())

            def _object(self, method: str) -> None:
                gateway.seen.append((method, self.path, dict(self.headers.items())))
                if gateway.down:
                    return self._answer(503)
                key = self.path.removeprefix("/proxy/storage/v1/objects/")
                if method == "PUT":
                    gateway.objects[key] = self.rfile.read(int(self.headers["Content-Length"]))
                    return self._answer(201)
                if key not in gateway.objects:
                    return self._answer(404)
                if method == "DELETE":
                    del gateway.objects[key]
                    return self._answer(204)
                return self._answer(200, gateway.objects[key])

            def do_PUT(self) -> None:  # noqa: N802
                self._object("PUT")

            def do_GET(self) -> None:  # noqa: N802
                self._object("GET")

            def do_DELETE(self) -> None:  # noqa: N802
                self._object("DELETE")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def gateway():
    fake = FakeStorageGateway()
    yield fake
    fake.close()


def _client(gateway: FakeStorageGateway) -> Any:
    settings = Settings(platform_url=gateway.url, platform_token_url=gateway.url + "/token",
                        platform_client_id="pms", platform_client_secret="s")
    return storage.build(settings)


def test_production_store_puts_gets_and_deletes_through_the_gateway(gateway):
    client = _client(gateway)
    assert isinstance(client, storage.HttpObjectStore)
    data = b"\x89PNG\r\n\x1a\n" + b"x" * 100
    digest = hashlib.sha256(data).hexdigest()
    client.put("env/properties/p/images/i.png", data, content_type="image/png", sha256=digest)
    method, path, headers = gateway.seen[0]
    assert (method, path) == ("PUT", "/proxy/storage/v1/objects/env/properties/p/images/i.png")
    assert headers["Authorization"] == "Bearer machine-token"
    assert headers["X-Checksum-Sha256"] == digest and headers["Content-Type"] == "image/png"
    assert client.get("env/properties/p/images/i.png") == data
    client.delete("env/properties/p/images/i.png")
    assert gateway.objects == {}
    client.delete("env/properties/p/images/i.png")  # already gone: not an error


def test_gateway_outage_is_storage_unavailable(gateway):
    gateway.down = True
    with pytest.raises(storage.StorageUnavailable) as caught:
        _client(gateway).put("a/b.png", b"x", content_type="image/png", sha256="0" * 64)
    assert caught.value.status == 503


def test_keys_that_could_climb_out_are_refused(tmp_path):
    local = storage.LocalObjectStore(tmp_path)
    for key in ("../x", "/abs", "a/../../b", "a//b"):
        with pytest.raises(ValueError):
            local.put(key, b"x", content_type="image/png", sha256="0")
