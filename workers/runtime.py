"""Background machinery a process starts for itself (never at import).

- `start_embedded(settings)`: the embedded default (`PMS_BROKER_URL=stub://`): a Dramatiq worker
  with a few threads on the in-process StubBroker, plus a relay thread publishing to the
  in-memory bus. Requests nudge the relay after commit.
- `start_for_web(settings)`: what the `web` process needs: the embedded runtime for stub://
  (unless `PMS_EMBEDDED_RUNTIME=0`), or else the relay nudge (a Dramatiq message sent from a
  background thread; a nudge that fails is dropped: the `relay` process sweeps anyway) and the
  dispatch of async jobs to the `run_job` actor.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from pms.config import Settings

log = logging.getLogger("pms.runtime")


class Nudger:
    """Coalescing, fire-and-forget nudges from a daemon thread (requests never wait on it)."""

    def __init__(self, send: Any) -> None:
        self._send = send
        self._pending = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="pms-relay-nudge", daemon=True)
        self._thread.start()

    def __call__(self, events: Any = None) -> None:
        self._pending.set()

    def _loop(self) -> None:
        while True:
            self._pending.wait()
            self._pending.clear()
            try:
                self._send()
            except Exception:  # noqa: BLE001 - dropped on purpose; the periodic sweep catches up
                log.debug("relay nudge dropped", exc_info=True)


@dataclass
class Runtime:
    worker: Any = None
    relay: Any = None
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def shutdown(self) -> None:
        from pms.db.uow import clear_after_emit_hooks
        from pms.services.housekeeping import set_room_dispatcher

        self.stop.set()
        if self.relay is not None:
            self.relay.wake()
        for thread in self.threads:
            thread.join(timeout=5)
        if self.worker is not None:
            self.worker.stop()
        clear_after_emit_hooks()
        set_room_dispatcher(None)


def start_embedded(settings: Settings, *, worker_threads: int = 2,
                   idle_interval: float = 1.0) -> Runtime:
    """StubBroker worker threads + an in-process relay (embedded default only)."""
    import dramatiq

    from pms.db.uow import register_after_emit
    from pms.services.housekeeping import set_room_dispatcher
    from workers import actors
    from workers.publisher import build_publisher
    from workers.relay import OutboxRelay
    from workers.subscriptions import default_subscribers

    runtime = Runtime()
    runtime.worker = dramatiq.Worker(actors.broker, worker_threads=worker_threads,
                                     worker_timeout=100)
    runtime.worker.start()
    runtime.relay = OutboxRelay(build_publisher(settings), subscribers=default_subscribers(),
                                idle_interval=idle_interval)
    thread = threading.Thread(target=runtime.relay.run_forever, args=(runtime.stop,),
                              name="pms-embedded-relay", daemon=True)
    thread.start()
    runtime.threads.append(thread)
    register_after_emit(lambda events, relay=runtime.relay: relay.wake())
    set_room_dispatcher(actors.dispatch_stayover)
    return runtime


def start_for_web(settings: Settings) -> Runtime:
    """The web process's background part (see module docstring)."""
    from workers.broker import is_stub

    if is_stub(settings):
        return start_embedded(settings) if settings.embedded_runtime else Runtime()
    from pms.db.uow import register_after_emit
    from pms.services import jobs
    from pms.services.housekeeping import set_room_dispatcher
    from workers import actors

    register_after_emit(Nudger(actors.relay_outbox.send))
    set_room_dispatcher(actors.dispatch_stayover)
    # Async jobs (the night audit over HTTP) run on the worker processes, not in the web one.
    jobs.set_dispatcher(lambda env_id, job_id: actors.run_job.send(str(env_id), str(job_id)))
    return Runtime()
