"""Gunicorn settings and hooks for the `web` process (`gunicorn -c python:pms.gunicorn_conf`).

- An instance-wide in-flight gauge: the master creates a small shared file; `pre_fork` gives
  each worker a slot, so `/v1/health` reports the sum over every worker of the instance.
- Draining: on SIGTERM the master raises the draining flag (health answers `draining`, new
  requests get 503), waits until in-flight requests reach zero (at most PMS_DRAIN_SECONDS), then
  performs gunicorn's normal graceful stop.
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

from pms.api import inflight

# Measured on the 2-core target box (bench/lib.py's Bench with server_env
# WEB_CONCURRENCY/PMS_THREADS, 3 x 5 s runs, 32 connections), GET /v1/properties/{id} and
# POST .../profiles: 4 workers x 2 threads served 3,183 GET/s (0.49 ms server CPU per
# request) and 279 POST/s; 2 x 4 served 2,394-2,717 GET/s and 258-271 POST/s; 4 x 1 and 5 x 2
# less of both. Threads of one worker share one GIL: while one waits for PostgreSQL another
# runs, but more than two per worker mostly wait for each other. Default: two workers per CPU,
# two threads each. Override with WEB_CONCURRENCY / PMS_THREADS / PMS_WORKER_CLASS.
bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", str(2 * (os.cpu_count() or 1))))
worker_class = os.environ.get("PMS_WORKER_CLASS", "gthread")
threads = int(os.environ.get("PMS_THREADS", "2"))
timeout = 30
graceful_timeout = 30
keepalive = 5
header_map = "drop"
accesslog = None
limit_request_line = 8190


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


def on_starting(server):  # noqa: ANN001, ANN201
    directory = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    path = os.path.join(directory, f"pms-inflight-{os.getpid()}")
    inflight.create_shared_file(path)
    os.environ["PMS_INFLIGHT_FILE"] = path
    _state["path"] = path
    _install_drain(server)


def _install_drain(server) -> None:  # noqa: ANN001
    original = server.handle_term
    drain_s = float(os.environ.get("PMS_DRAIN_SECONDS", "5"))

    def handle_term() -> None:
        if _state.get("draining"):
            original()
            return
        _state["draining"] = True
        inflight.set_flag(str(_state["path"]), 1)
        server.log.info("SIGTERM: draining (up to %.1fs)", drain_s)

        def wait_then_stop() -> None:
            deadline = time.monotonic() + drain_s
            while time.monotonic() < deadline:
                if inflight.read_total(str(_state["path"])) <= 0:
                    break
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=wait_then_stop, daemon=True).start()

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
