"""The outbox relay loop: sweep due rows to the bus, push audit rows, purge old ones.

`OutboxRelay.run_once()` drains what is due now (batch after batch); `run_forever(stop)` is the
`relay` process (`pms-cli outbox relay --follow`) and the embedded worker thread: it sleeps
between sweeps unless nudged (`wake()`), backs off while the broker is unreachable, and runs the
periodic purge (published rows past the retention period, expired Idempotency-Key records).
The database work is pms.services.outbox; the relay only orchestrates.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pms.db.database import is_postgres
from pms.services import outbox
from pms.services.outbox import Publisher, RelayResult, Subscriber

log = logging.getLogger("pms.relay")


@dataclass
class RelayTotals:
    batches: int = 0
    claimed: int = 0
    published: int = 0
    failed: int = 0
    audit_pushed: int = 0
    broker_error: str | None = None
    published_ids: list[str] = field(default_factory=list)

    def add(self, result: RelayResult) -> None:
        self.batches += 1
        self.claimed += result.claimed
        self.published += result.published
        self.failed += result.failed
        self.published_ids.extend(result.published_ids)
        if result.broker_error:
            self.broker_error = result.broker_error

    def as_dict(self) -> dict[str, Any]:
        return {"batches": self.batches, "claimed": self.claimed, "published": self.published,
                "failed": self.failed, "audit_pushed": self.audit_pushed,
                "broker_error": self.broker_error}


class OutboxRelay:
    """Publishes outbox rows through `publisher`, then feeds the internal subscribers."""

    def __init__(self, publisher: Publisher, *, batch_size: int = 500,
                 idle_interval: float = 1.0, max_broker_backoff: float = 5.0,
                 subscribers: dict[str, list[Subscriber]] | None = None,
                 push_audit: bool = False, retention: timedelta = timedelta(days=7),
                 purge_every: float = 3600.0, env_id: uuid.UUID | None = None,
                 now: Callable[[], datetime] | None = None) -> None:
        self.publisher = publisher
        self.batch_size = batch_size
        self.idle_interval = idle_interval
        self.max_broker_backoff = max_broker_backoff
        self.subscribers = subscribers or {}
        self.push_audit = push_audit
        self.retention = retention
        self.purge_every = purge_every
        self.env_id = env_id
        self._now = now or (lambda: datetime.now(UTC))
        self._wake = threading.Event()
        self._last_purge = 0.0

    def wake(self) -> None:
        """Nudge: sweep now instead of at the end of the idle interval."""
        self._wake.set()

    def run_once(self, *, max_batches: int | None = None,
                 on_batch: Callable[[RelayResult], None] | None = None) -> RelayTotals:
        """Publish every due row (stopping at a broker error); push audit rows if enabled."""
        totals = RelayTotals()
        if max_batches is None and on_batch is None and is_postgres():
            # PostgreSQL: database and broker work overlap (see outbox.relay_pipelined).
            for result in outbox.relay_pipelined(self.publisher, limit=self.batch_size,
                                                 now=self._now(), subscribers=self.subscribers,
                                                 env_id=self.env_id):
                totals.add(result)
        else:
            while max_batches is None or totals.batches < max_batches:
                result = outbox.relay_batch(self.publisher, limit=self.batch_size,
                                            now=self._now(), subscribers=self.subscribers,
                                            env_id=self.env_id)
                totals.add(result)
                if on_batch is not None:
                    on_batch(result)
                if (result.broker_error or result.claimed < self.batch_size
                        or result.published == 0):
                    break
        while self.push_audit and not totals.broker_error:
            audit = outbox.push_audit_batch(self.publisher, limit=self.batch_size,
                                            env_id=self.env_id)
            totals.audit_pushed += audit.published
            if audit.broker_error:
                totals.broker_error = audit.broker_error
            if audit.claimed < self.batch_size or audit.published == 0:
                break
        return totals

    def purge(self) -> dict[str, int]:
        """Delete published rows past retention and expired idempotency records."""
        now = self._now()
        purged = outbox.purge_published(older_than=self.retention, now=now)
        keys = outbox.purge_idempotency(outbox.known_envs(), now=now)
        return {"outbox_rows": purged, "idempotency_records": keys}

    def run_forever(self, stop: threading.Event) -> None:
        """Sweep until `stop` is set (the `relay` process and the embedded worker thread)."""
        backoff = 0.0
        while not stop.is_set():
            try:
                totals = self.run_once()
                if time.monotonic() - self._last_purge >= self.purge_every:
                    self._last_purge = time.monotonic()
                    log.info("outbox purge: %s", self.purge())
            except Exception:  # noqa: BLE001 - e.g. the database restarting; try again shortly
                log.warning("relay sweep failed", exc_info=True)
                totals = RelayTotals(broker_error="sweep failed")
            if totals.broker_error:
                backoff = min(max(backoff * 2, 0.2), self.max_broker_backoff)
                log.warning("broker unavailable (%s); next try in %.1fs",
                            totals.broker_error, backoff)
                stop.wait(backoff)
                continue
            backoff = 0.0
            if totals.published and totals.claimed >= self.batch_size:
                continue
            self._wake.wait(self.idle_interval)
            self._wake.clear()
        close = getattr(self.publisher, "close", None)
        if close is not None:
            close()
