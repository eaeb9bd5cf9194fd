"""Gunicorn settings and hooks for the `web` process (`gunicorn -c python:pms.gunicorn_conf`).

- An instance-wide in-flight gauge: the master creates a small shared file; `pre_fork` gives
  each worker a slot, so `/v1/health` reports the sum over every worker of the instance.
- Draining (docs/operations/deploys.md): on SIGTERM the master first lowers readiness
  (`/v1/health` answers 503 `draining`) and keeps serving every request for PMS_DRAIN_SECONDS, so
  the load balancer's health checks take the instance out of rotation before it stops taking
  work; then it refuses what still arrives on kept-alive connections (503, retried elsewhere by
  the balancer) and performs gunicorn's graceful stop for the requests in flight. The budgets
  nest: balancer detection (check interval x fall) < drain time < `graceful_timeout`, which here
  counts from the SIGTERM (the drain included) < the orchestrator's grace (30 s). A second
  SIGTERM skips the rest of the drain; SIGINT/SIGQUIT stop at once.
- SIGHUP (in-place reload: new workers, old ones stopped gracefully) is kept working, but deploys
  replace instances behind the load balancer: a reload has no readiness phase, and gunicorn has
  open reports of requests dropped on HUP.
- `header_map = "drop"` (gunicorn's default, kept explicit): headers with underscores such as
  `X-Platform_Env-Id` are dropped, so they can never pose as the tenant header.
- The control socket (gunicorn >= 25.1, for `gunicornc`) defaults to ONE path per user
  (`$XDG_RUNTIME_DIR/gunicorn.ctl` or `~/.gunicorn/gunicorn.ctl`): a second instance on the host
  would unlink and take over the first one's socket, and remove it when it stops. Each instance
  gets its own path instead, named after the master's pid; `PMS_GUNICORN_CONTROL_SOCKET` sets a
  path, or `off` disables the socket.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time

import gunicorn.http.message as _gunicorn_message
import gunicorn.util as _gunicorn_util

from pms.api import inflight
from pms.config import Limits

_MAX_BODY_BYTES = Limits().max_body_bytes

# Measured on the 2-core target box (bench/lib.py's Bench with server_env
# WEB_CONCURRENCY/PMS_THREADS, 3 x 5 s runs, 32 connections), GET /v1/properties/{id} and
# POST .../profiles: 4 workers x 2 threads served 3,183 GET/s (0.49 ms server CPU per
# request) and 279 POST/s; 2 x 4 served 2,394-2,717 GET/s and 258-271 POST/s; 4 x 1 and 5 x 2
# less of both. Threads of one worker share one GIL: while one waits for PostgreSQL another
# runs, but more than two per worker mostly wait for each other. Default: two workers per CPU,
# two threads each. Override with WEB_CONCURRENCY / PMS_THREADS / PMS_WORKER_CLASS.
# Re-checked with the write path (GET property paired with bare Falcon, 3 x 5 s pairs, on the box
# loaded by other work, load average 6-10): 4 x 1 gave 1.24-1.38 ms server CPU per GET and a
# paired ratio of 0.24; 4 x 2 gave 1.06-1.50 ms and 0.27. Still 4 x 2.
# PMS_HOST: the address to listen on (all by default, as a container needs; `pms-cli serve`, the
# `make run` demo, sets 127.0.0.1 unless told otherwise)
bind = f"{os.environ.get('PMS_HOST', '0.0.0.0')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", str(2 * (os.cpu_count() or 1))))
worker_class = os.environ.get("PMS_WORKER_CLASS", "gthread")
threads = int(os.environ.get("PMS_THREADS", "2"))
timeout = 30
# The whole shutdown budget from SIGTERM, drain included (see _install_drain); below the
# orchestrator's 30 s grace, so SIGKILL never interrupts a request we accepted.
graceful_timeout = 25
DEFAULT_DRAIN_S = 10.0  # > HAProxy's inter 2s x fall 2 (+ a slow check) in docs/operations/deploys.md
keepalive = 5
# Each worker's heartbeat (gunicorn's WorkerTmp: one utime() per pass of its event loop, so
# several per request) on a memory file system rather than the disk-backed default temp dir,
# as gunicorn's docs advise: on ext4 it showed in the profile of a GET (about 1% of a worker).
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
header_map = "drop"
accesslog = None
# Request line and header limits (CONTRACT §3: every refusal is problem+json). gunicorn answers
# its own limits with an HTML page, so they are set ABOVE the app's documented ones
# (pms.api.middleware.RequestLimitsMiddleware: 8,000-byte target -> 414, 16 KiB header -> 431),
# and gunicorn's HTML answer remains only for lines over 16 KiB or header fields over 128 KiB.
# gunicorn caps limit_request_line at its MAX_REQUEST_LINE (8190) unless 0, which would mean
# no bound at all; its cap is raised to our bound instead (read when each request is parsed).
limit_request_line = 16 * 1024
limit_request_field_size = 128 * 1024
limit_request_fields = 100
if getattr(_gunicorn_message, "MAX_REQUEST_LINE", limit_request_line) < limit_request_line:
    _gunicorn_message.MAX_REQUEST_LINE = limit_request_line

# What gunicorn still answers itself (a header field over 128 KiB, a line over 16 KiB, a
# malformed request: the app never sees these) is problem+json too, not its HTML page: its
# workers write such answers through `gunicorn.util.write_error`, replaced here.
_GUNICORN_CODES = {400: "bad_request", 403: "forbidden", 414: "uri_too_long",
                   417: "expectation_failed", 431: "header_too_large", 500: "internal_error",
                   501: "not_implemented"}
_GUNICORN_DETAILS = {
    414: "the request line is over the server's limit",
    431: f"a request header field is over the server's limit ({128 * 1024} bytes)",
}


def _problem_error(sock, status_int, reason, mesg):  # noqa: ANN001, ANN201, ARG001
    import json

    from pms.api.problems import problem_body

    code = _GUNICORN_CODES.get(status_int, "bad_request")
    body = json.dumps(problem_body(status_int, code, reason,
                                   _GUNICORN_DETAILS.get(status_int, reason))).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/problem+json\r\nContent-Length: {len(body)}\r\n\r\n")
    _gunicorn_util.write_nonblock(sock, head.encode("latin-1") + body)


_gunicorn_util.write_error = _problem_error


def pre_request(worker, req):  # noqa: ANN001, ANN201
    """A body over the limit is answered 413 without being read, and a chunked body may be left
    partly unread by a refusal: gunicorn would then drop the kept-alive connection after the
    answer (it drains at most 64 KiB), leaving the client's next request on it unanswered.
    Marking such requests to close makes the answer say `Connection: close`."""
    length = None
    chunked = False
    for name, value in req.headers:  # one pass (PERF: it runs for every request)
        if name == "CONTENT-LENGTH":
            if length is None:
                length = value
        elif name == "TRANSFER-ENCODING" and "chunked" in value.lower():
            chunked = True
    if chunked or (length is not None and length.isdigit() and int(length) > _MAX_BODY_BYTES):
        req.must_close = True


def _control_socket() -> tuple[str, bool]:
    """(path, disabled) for this instance's control socket; evaluated in the master."""
    given = os.environ.get("PMS_GUNICORN_CONTROL_SOCKET", "").strip()
    if given.lower() in ("off", "none", "0", "false"):
        return "", True
    if given:
        return given, False
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    directory = runtime if runtime and os.path.isdir(runtime) else tempfile.gettempdir()
    return os.path.join(directory, f"pms-gunicorn-{os.getpid()}.ctl"), False


control_socket, control_socket_disable = _control_socket()

_state: dict[str, object] = {}


def _refuse_development_fallbacks(server) -> None:  # noqa: ANN001
    """outside the embedded default, the master refuses to start while PMS_JWKS_URL
    or PMS_PLATFORM_URL is unset (pms/startup.py), before any worker is forked."""
    import sys

    from pms.config import load_settings
    from pms.startup import UnsafeConfiguration, refuse_development_fallbacks

    try:
        refuse_development_fallbacks(load_settings(), "web")
    except (UnsafeConfiguration, ValueError) as exc:
        server.log.error("%s", exc)
        sys.stderr.write(f"{exc}\n")
        sys.exit(3)


def on_starting(server):  # noqa: ANN001, ANN201
    _refuse_development_fallbacks(server)
    directory = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    path = os.path.join(directory, f"pms-inflight-{os.getpid()}")
    inflight.create_shared_file(path)
    os.environ["PMS_INFLIGHT_FILE"] = path
    _state["path"] = path
    _install_drain(server)


def _drain_seconds(budget: float) -> float:
    """PMS_DRAIN_SECONDS, kept below the graceful budget so in-flight requests get time too."""
    drain_s = float(os.environ.get("PMS_DRAIN_SECONDS", str(DEFAULT_DRAIN_S)))
    return max(0.0, min(drain_s, budget - 5.0))


def _install_drain(server) -> None:  # noqa: ANN001
    original = server.handle_term
    budget = float(server.cfg.graceful_timeout)
    drain_s = _drain_seconds(budget)
    stop_now = threading.Event()

    def handle_term() -> None:
        if _state.get("draining"):
            stop_now.set()  # a second SIGTERM: stop taking work now
            if _state.get("stopping"):
                original()
            return
        _state["draining"] = True
        started = time.monotonic()
        inflight.set_flag(str(_state["path"]), inflight.DRAINING)
        server.log.info("SIGTERM: draining for %.1fs, then a graceful stop", drain_s)

        def drain_then_stop() -> None:
            # the wait is the point: the balancer needs check interval x fall to notice
            stop_now.wait(drain_s)
            inflight.set_flag(str(_state["path"]), inflight.STOPPING)
            # what is left of the budget goes to the requests in flight (Arbiter.stop reads
            # graceful_timeout when it starts waiting for the workers)
            left = max(1, int(budget - (time.monotonic() - started)))
            server.cfg.set("graceful_timeout", left)
            _state["stopping"] = True
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=drain_then_stop, daemon=True, name="pms-drain").start()

    server.handle_term = handle_term


def pre_fork(server, worker):  # noqa: ANN001, ANN201
    taken = {getattr(w, "pms_slot", None) for w in server.WORKERS.values()}
    worker.pms_slot = next(i for i in range(1, inflight.MAX_SLOTS) if i not in taken)
    inflight.clear_slot(str(_state["path"]), worker.pms_slot)


def post_fork(server, worker):  # noqa: ANN001, ANN201
    os.environ["PMS_INFLIGHT_SLOT"] = str(worker.pms_slot)


def child_exit(server, worker):  # noqa: ANN001, ANN201
    # A worker that died mid-request must not leave its count behind.
    if getattr(worker, "pms_slot", None):
        inflight.clear_slot(str(_state["path"]), worker.pms_slot)


def on_exit(server):  # noqa: ANN001, ANN201
    path = _state.get("path")
    if path and os.path.exists(str(path)):
        os.unlink(str(path))
