"""The front desk benchmark scenario's own parts (bench/scenarios/frontdesk.py): it is discovered
after the reservations scenario, and its wrk script sends every path of its slice at most once
(the wrk threads share the slice, none repeats a stay; wrk builds one request of the first
thread's script to check it and never sends it, so one path may go unused) with the method and
body given, then reports the harness's summary. Nothing here passes or fails on a timing."""

from __future__ import annotations

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench import lib, run
from bench.scenarios import frontdesk


class _Recorder(BaseHTTPRequestHandler):
    seen: list[tuple[str, str, bytes]] = []
    lock = threading.Lock()

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with self.lock:
            self.seen.append((self.command, self.path, body))
        self.send_response(201)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_POST = _answer  # noqa: N815 - http.server's naming
    do_GET = _answer  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass


def test_the_scenario_runs_after_reservations():
    found = list(run.discover())
    assert "frontdesk" in found
    assert found.index("frontdesk") > found.index("reservations")


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
def test_the_slice_driver_sends_each_path_once_and_reports():
    _Recorder.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    bench = lib.Bench(duration=1, runs=1, connections=4, wrk_threads=2)
    paths = [f"/v1/stays/{n}/check-in" for n in range(37)]
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        script = frontdesk._driver(paths, "POST", "{}", 2)
        m = bench.wrk_once(url, method="POST", body_template="{}", duration=1, script=script)
    finally:
        server.shutdown()
        bench.close()
    sent = [(method, path) for method, path, _ in _Recorder.seen if path in paths]
    sent_paths = [p for _, p in sent]
    assert len(set(sent_paths)) == len(sent_paths)  # no stay twice
    assert set(sent_paths) <= set(paths) and len(sent_paths) >= len(paths) - 1
    assert {method for method, _ in sent} == {"POST"}
    assert all(json.loads(body) == {} for _, path, body in _Recorder.seen if path in paths)
    assert m.errors == 0 and m.extra["requests"] >= len(paths) - 1
