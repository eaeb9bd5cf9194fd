"""What each entry point wires at start-up, in one visible place each (never at import).

- `start_for_web(settings)` (gunicorn's `get_app()`, after fork): with a real broker the web
  process starts nothing and registers nothing: requests write outbox rows and the `relay`
  process publishes them (it polls with a short idle interval, so no nudge is sent). With
  `stub://` it starts the embedded runtime (unless `PMS_EMBEDDED_RUNTIME=0`).
- `start_embedded(settings)`: the embedded default: Dramatiq worker threads on the in-process
  StubBroker, and a relay thread publishing to the in-memory bus; the only after-commit hook,
  added here to the process's wiring (`pms.wiring.add_after_emit`, taken out again by
  `Runtime.shutdown`), wakes that relay (its loop would find the rows anyway); and the
  scheduler thread (pms.scheduling: the key sweeper, the purges, the reconciler), so the
  embedded default sweeps without a cron line.
- `wire_worker(settings)` (workers.boot; the `worker` process type, from
  workers.middleware.WorkerBoot after Dramatiq booted the process): binds the database. Actors
  open their own tenant and connection scope per message; nothing else is registered.

Where the relay runs: only in the `relay` process type and, in the embedded default, in the
thread started here; never in a Dramatiq worker.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pms.config import Settings
from workers.boot import wire_worker

__all__ = ["Runtime", "embedded_worker", "settle_embedded", "start_embedded", "start_for_web",
           "stop_worker", "wire_worker"]

log = logging.getLogger("pms.runtime")

# How long a one-shot command on the embedded default waits for the reactions it enqueued.
EMBEDDED_JOIN_SECONDS = 120


@dataclass
class Runtime:
    worker: Any = None
    relay: Any = None
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)
    nudge: Any = None  # the after-emit hook added to pms.wiring, taken out again at shutdown

    def shutdown(self) -> None:
        from pms import wiring

        if self.nudge is not None:
            wiring.remove_after_emit(self.nudge)
            self.nudge = None
        self.stop.set()
        if self.relay is not None:
            self.relay.wake()
        for thread in self.threads:
            thread.join(timeout=5)
        if self.worker is not None:
            stop_worker(self.worker)


def start_embedded(settings: Settings, *, worker_threads: int = 2,
                   idle_interval: float = 1.0) -> Runtime:
    """StubBroker worker threads + an in-process relay (embedded default only)."""
    import dramatiq

    from pms import wiring
    from pms.platform import build_platform
    from pms.scheduling import start_thread as start_scheduler
    from workers import actors
    from workers.publisher import build_publisher
    from workers.relay import OutboxRelay
    from workers.subscriptions import default_subscribers

    runtime = Runtime()
    runtime.worker = dramatiq.Worker(actors.broker, worker_threads=worker_threads,
                                     worker_timeout=100)
    runtime.worker.start()
    runtime.relay = OutboxRelay(build_publisher(settings), subscribers=default_subscribers(),
                                idle_interval=idle_interval, purge_every=None)
    thread = threading.Thread(target=runtime.relay.run_forever, args=(runtime.stop,),
                              name="pms-embedded-relay", daemon=True)
    thread.start()
    runtime.threads.append(thread)
    runtime.threads.append(start_scheduler(build_platform(settings), runtime.stop))
    runtime.nudge = lambda events, relay=runtime.relay: relay.wake()
    wiring.add_after_emit(runtime.nudge)
    return runtime


def start_for_web(settings: Settings) -> Runtime:
    """The web process's background part (see module docstring)."""
    from workers.broker import is_stub

    if is_stub(settings) and settings.embedded_runtime:
        return start_embedded(settings)
    return Runtime()


@contextmanager
def embedded_worker(settings: Settings) -> Iterator[Callable[[], None]]:
    """With the embedded StubBroker: Dramatiq worker threads for a one-shot command, and a
    `join()` that waits until every message enqueued so far has run (a no-op on a real broker,
    whose `worker` processes run them)."""
    from workers import actors
    from workers.broker import is_stub

    if not is_stub(settings):
        yield lambda: None
        return
    import dramatiq
    from dramatiq.errors import QueueJoinTimeout

    worker = dramatiq.Worker(actors.broker, worker_threads=2, worker_timeout=100)
    worker.start()

    def join() -> None:
        # A message that keeps failing is retried with backoff (minutes to hours, per its
        # actor): the command waits at most EMBEDDED_JOIN_SECONDS in all, then says so in the
        # log and goes on, instead of holding the terminal until the retries run out.
        deadline = time.monotonic() + EMBEDDED_JOIN_SECONDS
        for queue in sorted(actors.broker.get_declared_queues()):
            left_ms = max(int((deadline - time.monotonic()) * 1000), 1)
            try:
                actors.broker.join(queue, fail_fast=False, timeout=left_ms)
            except QueueJoinTimeout:
                log.warning("embedded worker: messages of %s still unfinished after %d s "
                            "(a failing reaction retrying with backoff); going on", queue,
                            EMBEDDED_JOIN_SECONDS)
                return

    try:
        yield join
    finally:
        stop_worker(worker)


def stop_worker(worker: Any) -> None:
    """Stop a Dramatiq worker and unhook it from its broker. Dramatiq leaves a stopped worker's
    middleware on the broker for good: a queue declared afterwards gets a consumer feeding a
    worker with no threads (its messages never run). On the StubBroker, a message the worker
    held is put back on its queue while its first delivery stays counted as unfinished, so a
    later wait for that queue (`join`) would never return: with no worker left on the broker,
    each queue's count is set back to the messages it holds."""
    worker.stop()
    broker = worker.broker
    broker.middleware[:] = [m for m in broker.middleware if getattr(m, "worker", None) is not worker]
    if any(getattr(m, "worker", None) is not None for m in broker.middleware):
        return  # another worker still runs on it: its deliveries are counted rightly
    for queue in getattr(broker, "queues", {}).values():
        with queue.all_tasks_done:  # the queue's own lock (qsize() would take it again)
            queue.unfinished_tasks = len(queue.queue)
            if not queue.unfinished_tasks:
                queue.all_tasks_done.notify_all()


def settle_embedded(settings: Settings, join: Callable[[], None], *,
                    max_rounds: int = 20) -> int:
    """The embedded default's background work, done now and in the caller's thread: relay every
    due outbox row and run the reactions it enqueues (`join`, from `embedded_worker`: one
    worker for the caller's whole run, as Dramatiq wires each worker into the broker for good),
    again until nothing is due (reactions write events of their own). A seeded demo hotel is
    then the hotel its events made (housekeeping tasks, notifications) before it serves.
    Returns the rows published; 0 on a real broker, where the relay and worker processes do
    this."""
    from workers.broker import is_stub

    if not is_stub(settings):
        return 0
    from workers.publisher import build_publisher
    from workers.relay import OutboxRelay
    from workers.subscriptions import default_subscribers

    relay = OutboxRelay(build_publisher(settings), subscribers=default_subscribers())
    published = 0
    try:
        for _ in range(max_rounds):
            totals = relay.sweep()
            join()
            published += totals.published
            if not totals.claimed and not totals.dispatched:
                break
    finally:
        relay.release()
    return published
