"""The outbox relay loop: sweep due rows to the bus, run reactions, push audit rows, purge.

`OutboxRelay.run_forever(stop)` is the `relay` process (`pms-cli outbox relay --follow`) and the
embedded relay thread: each sweep owns its connection (pms.db.iteration: opened at the start of
the sweep, closed at its end, so a connection the server dropped goes with the sweep),
heartbeats its partition leases, drains what is due batch by batch, runs the reactions due
(whatever the bus said), then sleeps `idle_interval` unless woken (`wake()`). Its clock is the
database's (pms.relay.clock.DbClock).
On stop it finishes the batch in hand and gives back its leases. `run_once()` is a one-shot
relay (CLI `--once`, tests): it gives its leases back when it returns.

One relay is one thread with its own publisher: pika connections are not thread-safe, so a
relay refuses to be driven from two threads. The database work is pms.relay.sweep and
pms.relay.audit_push; this module only orchestrates.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pms.db.database import connection_scope
from pms.db.iteration import iteration_scope
from pms.relay import operations as outbox_ops
from pms.relay import sweep as relay
from pms.relay.audit_push import push_audit_batch
from pms.relay.clock import DbClock
from pms.relay.core import COUNTERS
from pms.relay.sweep import Publisher, RelayResult, Subscriber

log = logging.getLogger("pms.relay")

# After a sweep in which nobody took audit rows, the next audit probe waits this long.
AUDIT_UNTAKEN_PAUSE_S = 30.0


@dataclass
class RelayTotals:
    batches: int = 0
    claimed: int = 0
    published: int = 0
    failed: int = 0
    parked: int = 0
    dispatched: int = 0
    dispatch_failed: int = 0
    audit_pushed: int = 0
    broker_error: str | None = None
    published_ids: list[str] = field(default_factory=list)

    def add(self, result: RelayResult) -> None:
        self.batches += 1
        for name in COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(result, name))
        self.published_ids.extend(result.published_ids)
        if result.broker_error:
            self.broker_error = result.broker_error

    def as_dict(self) -> dict[str, Any]:
        return {"batches": self.batches, **{name: getattr(self, name) for name in COUNTERS},
                "audit_pushed": self.audit_pushed, "broker_error": self.broker_error}


class OutboxRelay:
    """Publishes outbox rows through `publisher` (used by one thread only), then runs the
    internal subscribers' reactions on their own cursor."""

    def __init__(self, publisher: Publisher, *, batch_size: int = 500,
                 idle_interval: float = 0.3, max_broker_backoff: float = 5.0,
                 subscribers: dict[str, list[Subscriber]] | None = None,
                 push_audit: bool = False, retention: timedelta = timedelta(days=7),
                 purge_every: float | None = 3600.0, env_id: uuid.UUID | None = None,
                 now: Callable[[], datetime] | None = None,
                 lease_s: float = relay.DEFAULT_LEASE_S,
                 max_attempts: int = relay.MAX_ATTEMPTS, owner: str | None = None) -> None:
        self.publisher = publisher
        self.batch_size = batch_size
        self.idle_interval = idle_interval
        self.max_broker_backoff = max_broker_backoff
        self.subscribers = subscribers or {}
        self.push_audit = push_audit
        self.retention = retention
        self.purge_every = purge_every
        self.env_id = env_id
        self.lease_s = lease_s
        self.max_attempts = max_attempts
        self.owner = owner or relay.new_owner()
        self.lease = relay.PartitionLease(self.owner, lease_s=lease_s)
        self._now = now or DbClock()  # leases and retries are compared across hosts
        self._wake = threading.Event()
        self._last_purge = 0.0
        self._audit_paused_until = 0.0
        self._thread: int | None = None
        self.failed_sweeps = 0  # sweeps that raised (database or publisher failure)

    def wake(self) -> None:
        """Nudge: sweep now instead of at the end of the idle interval (any thread)."""
        self._wake.set()

    def _guard(self) -> None:
        ident = threading.get_ident()
        if self._thread is None:
            self._thread = ident
        elif self._thread != ident:
            raise RuntimeError("an OutboxRelay (and its publisher) belongs to one thread; "
                               "build one relay per thread")

    def sweep(self, *, max_batches: int | None = None,
              on_batch: Callable[[RelayResult], None] | None = None,
              stop: threading.Event | None = None) -> RelayTotals:
        """Heartbeat if due, publish every due row of this relay's partitions batch by batch
        (stopping at a broker error or `stop`), run due reactions, push audit rows. Leases are
        kept for the next sweep."""
        self._guard()
        totals = RelayTotals()
        claimed = [0]  # batches leased so far (results arrive one batch later than claims)

        def claim(marks: relay.Marks | None) -> list[Any]:
            now = self._now()
            if self.lease.due(now):  # a long drain keeps its partitions
                self.lease.heartbeat(now)
            rows = relay.claim_batch(owner=self.owner, limit=self.batch_size, now=now,
                                     lease_s=self.lease_s, env_id=self.env_id, marks=marks)
            claimed[0] += bool(rows)
            return rows

        def more() -> bool:
            return ((max_batches is None or claimed[0] < max_batches)
                    and not (stop is not None and stop.is_set()))

        for result in relay.relay_stream(self.publisher, claim, limit=self.batch_size,
                                         owner=self.owner, clock=self._now,
                                         subscribers=self.subscribers, lease_s=self.lease_s,
                                         max_attempts=self.max_attempts, more=more):
            totals.add(result)
            if on_batch is not None:
                on_batch(result)
        # reactions do not wait for the bus: due ones run even when the broker refused or
        # could not take this sweep's events (a failing enqueue stops the pass, see dispatch_rows)
        self._dispatch_due(totals)
        if self.push_audit and not totals.broker_error:
            self._push_audit(totals)
        return totals

    def _dispatch_due(self, totals: RelayTotals) -> None:
        """Reactions not run with their publish: of rows not published (refused, backing off,
        parked, broker down, committed during the sweep), backing off after a failure, or left
        by a relay that stopped."""
        now = self._now()
        rows = relay.claim_dispatch(owner=self.owner, types=self.subscribers,
                                    limit=self.batch_size, now=now, lease_s=self.lease_s,
                                    env_id=self.env_id)
        if rows:
            ok, failed = relay.dispatch_rows(rows, self.subscribers, now=now)
            totals.dispatched += ok
            totals.dispatch_failed += failed

    def _push_audit(self, totals: RelayTotals) -> None:
        if time.monotonic() < self._audit_paused_until:
            return
        while True:
            audit = push_audit_batch(self.publisher, limit=self.batch_size, env_id=self.env_id,
                                     owner=self.owner, now=self._now(), lease_s=self.lease_s)
            totals.audit_pushed += audit.published
            if audit.broker_error:
                totals.broker_error = audit.broker_error
            if audit.failed:
                self._audit_paused_until = time.monotonic() + AUDIT_UNTAKEN_PAUSE_S
            if audit.claimed < self.batch_size or audit.published == 0:
                return

    def run_once(self, *, max_batches: int | None = None,
                 on_batch: Callable[[RelayResult], None] | None = None) -> RelayTotals:
        """One sweep by a one-shot relay; its leases are given back before it returns."""
        try:
            return self.sweep(max_batches=max_batches, on_batch=on_batch)
        finally:
            self.release()

    def release(self) -> None:
        """Give back partitions, row leases and the node (best effort: they expire anyway)."""
        try:
            self.lease.release()
        except Exception:  # noqa: BLE001 - e.g. the database is down; the leases expire
            log.warning("relay %s could not release its leases", self.owner, exc_info=True)

    def purge(self) -> dict[str, int]:
        """Delete published rows past retention, expired idempotency records and dead kiosk
        sessions past theirs."""
        now = self._now()
        purged = outbox_ops.purge_published(older_than=self.retention, now=now)
        envs = outbox_ops.known_envs()
        keys = outbox_ops.purge_idempotency(envs, now=now)
        sessions = outbox_ops.purge_kiosk_sessions(envs, now=now)
        return {"outbox_rows": purged, "idempotency_records": keys, "kiosk_sessions": sessions}

    def run_forever(self, stop: threading.Event) -> None:
        """Sweep until `stop` is set, then give the leases back and close the publisher."""
        backoff = 0.0
        try:
            while not stop.is_set():
                try:
                    # each sweep owns its connection: a dead one goes with the sweep
                    with iteration_scope():
                        totals = self.sweep(stop=stop)
                        # None: the process's scheduler runs the purges (pms.scheduling)
                        if (self.purge_every is not None
                                and time.monotonic() - self._last_purge >= self.purge_every):
                            self._last_purge = time.monotonic()
                            log.info("outbox purge: %s", self.purge())
                except Exception:  # noqa: BLE001 - e.g. the database restarting; try again
                    self.failed_sweeps += 1
                    log.warning("relay sweep failed", exc_info=True)
                    totals = RelayTotals(broker_error="sweep failed")
                if totals.broker_error:
                    backoff = min(max(backoff * 2, 0.2), self.max_broker_backoff)
                    log.warning("relay sweep stopped (%s); next try in %.1fs",
                                totals.broker_error, backoff)
                    stop.wait(backoff)
                    continue
                backoff = 0.0
                if totals.claimed >= self.batch_size:
                    continue  # more is due: no pause
                self._wake.wait(self.idle_interval)
                self._wake.clear()
        finally:
            try:
                with connection_scope():
                    self.release()
            except Exception:  # noqa: BLE001 - the database is down: the leases expire
                log.warning("relay %s stopped without releasing its leases", self.owner)
            close = getattr(self.publisher, "close", None)
            if close is not None:
                close()
