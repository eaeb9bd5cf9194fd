"""The outbox relay's shared vocabulary: limits, the broker's two kinds of failure, the
publisher protocol, a batch's result, and the relay's own short bookkeeping transactions.

Kept apart so that every part of the relay (pms.relay.partitions, relay_claim,
relay_marks, relay_dispatch, pms.relay.audit_push) imports it without importing each other.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

import peewee

from pms.db.database import db, is_postgres, write_begin_args

MAX_BACKOFF_S = 60.0
BASE_BACKOFF_S = 0.5
MAX_ATTEMPTS = 10  # about three minutes of backoff, then the row is parked
MAX_DISPATCH_ATTEMPTS = 10
DEFAULT_LEASE_S = 30.0  # must exceed a batch's publish time (the publisher's confirm timeout)


class PublishRejected(Exception):
    """The broker refused one message (unroutable return, nack): back off that row only."""


class BrokerUnavailable(Exception):
    """The broker cannot be reached or stopped answering: back off the whole relay."""


class Publisher(Protocol):
    def publish(self, event: dict[str, Any], *, routing_key: str | None = None) -> None:
        """Publish one CloudEvent and return once the broker confirmed it.

        Raises PublishRejected (row-level: nacked; or unroutable when the caller passes
        `require_route=True`, as the audit push does) or BrokerUnavailable (connection-level).
        An event the broker accepted but could route to no queue is delivered.
        A publisher may also offer `publish_many(events) -> [None | exception]` (a whole batch
        in flight, one outcome per event): the relay uses it when present.
        """


Subscriber = Callable[[dict[str, Any]], None]


class ReactionBatch(Protocol):
    """What one pass of reactions sends, gathered to go to the broker together: one wait for
    all the confirms instead of one per message (workers.enqueue)."""

    def row(self, key: Any) -> AbstractContextManager[None]:
        """Messages sent inside belong to the row `key`."""

    def flush(self) -> dict[Any, str]:
        """Send what was gathered; the rows whose messages the broker did not take, with why."""


class Reactions(dict[str, list[Subscriber]]):
    """Event type -> reactions (the internal subscribers), and optionally `batching`: a
    factory of ReactionBatch, so a pass of reactions costs one broker round trip."""

    def __init__(self, mapping: Mapping[str, list[Subscriber]] = {},  # noqa: B006 - read only
                 *, batching: Callable[[], ReactionBatch] | None = None) -> None:
        super().__init__(mapping)
        self.batching = batching


# The counters of a batch's RelayResult, summed by a relay's totals (workers.relay.RelayTotals).
COUNTERS = ("claimed", "published", "failed", "parked", "dispatched", "dispatch_failed")


@dataclass
class RelayResult:
    claimed: int = 0
    published: int = 0
    failed: int = 0
    parked: int = 0
    dispatched: int = 0
    dispatch_failed: int = 0
    broker_error: str | None = None
    published_ids: list[str] = field(default_factory=list)
    failures: dict[uuid.UUID, str] = field(default_factory=dict)


def compute_backoff(attempts: int) -> float:
    """Seconds before the next try of a row that failed `attempts` times (capped)."""
    return min(BASE_BACKOFF_S * (2 ** max(attempts - 1, 0)), MAX_BACKOFF_S)


def new_owner() -> str:
    """A relay's lease name: host, pid and a random part (unique even across restarts)."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@contextmanager
def bookkeeping() -> Iterator[None]:
    """A write transaction of the relay's own bookkeeping (leases, marks), committed without
    waiting for the WAL flush where the database offers it: losing one in a database crash only
    means a row goes out again (at least once), never that one is lost. The outbox rows
    themselves were committed by their use case, synchronously."""
    from pms.db import database

    nowait = getattr(database, "commit_without_waiting", None)
    with nowait() if nowait is not None else nullcontext(), db.atomic(**write_begin_args()):
        yield


def update_chosen(model: Any, key: Any, candidates: peewee.ModelSelect,
                  sets: dict[Any, Any]) -> Any:
    """`UPDATE model SET sets` over the rows `candidates` (a select of `key`) picks, with the
    pick made exactly once. PostgreSQL: FOR UPDATE SKIP LOCKED in a CTE joined by UPDATE ...
    FROM (`WHERE key IN (subquery LIMIT n)` may run the subquery more than once and take more
    than n rows). SQLite: a plain IN; BEGIN IMMEDIATE already excludes every other writer."""
    if not is_postgres():
        return model.update(sets).where(key.in_(candidates))
    chosen = candidates.for_update("FOR UPDATE SKIP LOCKED").cte("chosen", columns=("pick",))
    return model.update(sets).from_(chosen).where(key == chosen.c.pick).with_cte(chosen)


__all__ = ["BASE_BACKOFF_S", "COUNTERS", "DEFAULT_LEASE_S", "MAX_ATTEMPTS", "MAX_BACKOFF_S",
           "MAX_DISPATCH_ATTEMPTS", "BrokerUnavailable", "PublishRejected", "Publisher",
           "ReactionBatch", "Reactions", "RelayResult", "Subscriber", "bookkeeping", "compute_backoff", "new_owner",
           "update_chosen"]
