"""The benchmark harness's own parts: scenario discovery, medians, CPU accounting from /proc, and
the wrk driver (unique Idempotency-Key and body per request, the BENCHJSON summary) against a
small recording HTTP server."""

from __future__ import annotations

import json
import os
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench import lib, run


def test_scenarios_are_discovered_in_order_with_a_run_function():
    found = run.discover()
    assert "properties" in found
    assert list(found)[0] == "properties"
    assert all(callable(module.run) for module in found.values())


def test_median_measurement_takes_medians_and_keeps_every_run():
    runs = [lib.Measurement(rate=r, p50_ms=p, p99_ms=p * 3, errors=e,
                            extra={"server_cpu_ms_per_req": c})
            for r, p, e, c in ((100, 1.0, 0, 0.5), (300, 3.0, 1, 0.7), (200, 2.0, 0, 0.6))]
    m = lib.median_measurement(runs)
    assert (m.rate, m.p50_ms, m.p99_ms, m.errors) == (200, 2.0, 6.0, 1)
    assert m.extra == {"server_cpu_ms_per_req": 0.6}
    assert [r["rate"] for r in m.runs] == [100, 300, 200]


def test_cpu_of_a_process_tree_is_read_from_proc():
    spent = lib.tree_cpu_seconds(os.getpid())
    sum(i * i for i in range(300_000))
    assert lib.tree_cpu_seconds(os.getpid()) > spent


class _Recorder(BaseHTTPRequestHandler):
    seen: list[tuple[str | None, bytes]] = []
    lock = threading.Lock()

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with self.lock:
            self.seen.append((self.headers.get("Idempotency-Key"), body))
        self.send_response(201)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
def test_the_wrk_driver_sends_unique_keys_and_bodies_and_reports():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    bench = lib.Bench(duration=1, runs=1, connections=4, wrk_threads=2)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        m = bench.wrk_once(url, method="POST", path="/x", headers={"X-Test": "1"},
                           body_template=json.dumps({"email": "g-{{n}}@bench.example"}),
                           unique=True)
    finally:
        server.shutdown()
        bench.close()
    seen = list(_Recorder.seen)
    assert m.rate > 0 and m.errors == 0 and m.p50_ms is not None
    assert m.extra["requests"] >= len(seen) - 8  # wrk may not count the last in-flight ones
    keys = [k for k, _ in seen]
    bodies = [b for _, b in seen]
    assert len(set(keys)) == len(keys) and None not in keys
    assert len(set(bodies)) == len(bodies)
    assert all(b"{{n}}" not in b and json.loads(b)["email"].startswith("g-") for b in bodies)


def test_paired_runs_alternate_and_take_the_median_of_per_pair_ratios():
    bench = lib.Bench(duration=1, runs=3)
    order: list[str] = []
    base_rates = iter([100.0, 200.0, 50.0])
    subject_rates = iter([30.0, 80.0, 10.0])

    def baseline() -> lib.Measurement:
        order.append("B")
        return lib.Measurement(rate=next(base_rates))

    def subject() -> lib.Measurement:
        order.append("S")
        return lib.Measurement(rate=next(subject_rates))

    try:
        base, measured, ratio = bench.paired(baseline, subject)
    finally:
        bench.close()
    assert order == ["B", "S", "B", "S", "B", "S"]
    assert (base.rate, measured.rate) == (100.0, 30.0)
    assert ratio == 0.3  # pair ratios 0.3, 0.4, 0.2; the ratio of the medians is also 0.3 here
    result = lib.Result("subject", measured, baseline="bare_falcon", goal=0.3, paired_ratio=ratio)
    assert bench.ratio(result) == 0.3
