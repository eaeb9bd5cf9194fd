"""The outbox relay: claim by row lease, publish outside any transaction, mark by id.

The pieces live in small modules, all re-exported here (callers import pms.relay.sweep):
- pms.relay.core: limits, broker failures, the publisher protocol, RelayResult;
- pms.relay.partitions: which partitions a relay holds (PartitionLease);
- pms.relay.claim: leasing due rows (claim_batch, claim_for_replay);
- pms.relay.marks: marking a batch (record_outcomes, Marks);
- pms.relay.dispatch: the internal subscribers' own cursor;
- this module: publishing a batch in waves and the relay's batch-after-batch stream.

One of the few places allowed `unscoped()`: the relay works across every tenant env (PostgreSQL
RLS lets it through for the outbox and audit tables only, see pms.db.migrator). It never opens or
closes a connection: its entry points (workers/relay.py, cli/outbox.py) hold the connection scope.

How a batch goes (no transaction is ever open across broker I/O):
1. Claim, in its own short committed transaction: the oldest due rows of the partitions this
   relay holds, `FOR UPDATE SKIP LOCKED`, leased (`lease_owner`, `lease_until`).
2. Publish outside any transaction, in waves: the n-th due row of every stream goes in wave
   n, so a row is sent only after every earlier row of its stream was confirmed (a stream:
   (env, aggregate type, subject), what one `aggregateversion` counter numbers; a room type's
   own events, its inventory events and its ARI events are three, pms.relay.claim).
3. Mark, by id and only rows still leased by this relay: published; or backed off
   (attempts + 1), PARKED after `max_attempts`; or released untried. The long-running relay
   sends a batch's marks in the same round trip and transaction as its next claim.
A relay that dies leaves its rows leased: they are due again when the lease expires, and go
out again with the same id (at least once; duplicates only within the in-flight window).

Per-aggregate order: an aggregate's rows share a partition (crc32 of its id), a partition is
held by one live relay at a time (relay_partition), a batch goes out in `aggregate_version`
order per aggregate (never by `created_at`, the writing host's clock), and a row is not claimed
while an earlier row of its aggregate is unpublished: leased, backing off, or PARKED. A parked
row holds its aggregate's later rows back until an operator replays it (`pms-cli outbox list
--parked`, `replay`): some events carry deltas (rate_schedule, restriction and inventory
updates), so a consumer applying events in aggregateversion order must never see a gap. Every
time the relay writes for another host to compare (leases, retries) is the database's
(pms.relay.clock).

Internal subscribers (reactions that enqueue Dramatiq messages) do not depend on the bus: they
run after the publish for the rows the broker confirmed, and on their own cursor for every
other row (dispatched_at, dispatch_attempts, dispatch_next_at; pms.relay.dispatch): a
failing reaction is retried alone and never republishes the external event. An event the
broker accepted but could route to no queue is published (the bus has no subscriber yet).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pms.db.scope import unscoped
from pms.events import envelope
from pms.relay.claim import (
    BEHIND_PARKED_S,
    ClaimedRow,
    claim_batch,
    claim_for_replay,
    release_behind,
    stream_key,
)
from pms.relay.clock import database_now
from pms.relay.core import (
    BASE_BACKOFF_S,
    DEFAULT_LEASE_S,
    MAX_ATTEMPTS,
    MAX_BACKOFF_S,
    MAX_DISPATCH_ATTEMPTS,
    BrokerUnavailable,
    Publisher,
    PublishRejected,
    RelayResult,
    Subscriber,
    bookkeeping,
    compute_backoff,
    new_owner,
    update_chosen,
)
from pms.relay.dispatch import (
    claim_dispatch,
    dispatch_rows,
    reaction_parked,
    replay_reactions,
)
from pms.relay.marks import Marks, Outcomes, marks_for, reacts, record_outcomes
from pms.relay.partitions import PartitionLease

# A claim: leases the next batch after applying the marks of the batch before (or None).
Claim = Callable[[Marks | None], list[Any]]


# -- publish -------------------------------------------------------------------------------------

def _waves(rows: list[Any]) -> list[list[Any]]:
    """Wave n holds the n-th row of every stream in the batch (in the batch's order)."""
    waves: list[list[Any]] = []
    seen: dict[tuple[Any, str, str], int] = {}
    for row in rows:
        key = stream_key(row)
        n = seen.get(key, 0)
        seen[key] = n + 1
        if n == len(waves):
            waves.append([])
        waves[n].append(row)
    return waves


def _send(publisher: Publisher, events: list[dict[str, Any]]) -> list[Exception | None]:
    publish_many = getattr(publisher, "publish_many", None)
    if publish_many is not None:
        outcomes: list[Exception | None] = publish_many(events)
        if len(outcomes) != len(events):
            raise RuntimeError(f"publisher returned {len(outcomes)} outcomes for {len(events)}")
        return outcomes
    outcomes = []
    for event in events:
        try:
            publisher.publish(event)
            outcomes.append(None)
        except BrokerUnavailable as exc:
            outcomes.extend([exc] * (len(events) - len(outcomes)))
            break
        except Exception as exc:  # noqa: BLE001 - recorded on the row
            outcomes.append(exc)
    return outcomes


def publish_rows(publisher: Publisher, rows: list[Any], *,
                 first: Callable[[], list[Exception | None]] | None = None) -> Outcomes:
    """Publish claimed rows wave by wave (no transaction is open here). `first`, if given,
    gives the outcomes of the first wave, already sent (see relay_stream)."""
    out = Outcomes()
    stopped: set[tuple[Any, str, str]] = set()  # streams with a failed or unsent earlier row
    waves = _waves(rows)
    for index, wave in enumerate(waves):
        ready = [r for r in wave if stream_key(r) not in stopped]
        out.untried.extend(r.id for r in wave if stream_key(r) in stopped)
        if not ready:
            continue
        if index == 0 and first is not None:
            outcomes = first()
        else:
            outcomes = _send(publisher, [envelope(r) for r in ready])
        for row, outcome in zip(ready, outcomes, strict=True):
            if outcome is None:
                out.published.append(row)
                continue
            stopped.add(stream_key(row))
            if isinstance(outcome, BrokerUnavailable):
                out.broker_error = out.broker_error or str(outcome) or "broker unavailable"
                out.untried.append(row.id)
            else:
                out.failures[row.id] = f"{type(outcome).__name__}: {outcome}"[:1000]
        if out.broker_error:
            out.untried.extend(r.id for later in waves[index + 1:] for r in later)
            break
    return out


# -- one batch, end to end -----------------------------------------------------------------------

def relay_rows(publisher: Publisher, rows: list[Any], *, owner: str, now: datetime,
               subscribers: dict[str, list[Subscriber]] | None = None,
               dispatch_types: Iterable[str] | None = None,
               lease_s: float = DEFAULT_LEASE_S, max_attempts: int = MAX_ATTEMPTS,
               first: Callable[[], list[Exception | None]] | None = None) -> RelayResult:
    """Publish claimed rows, mark them, then run the reactions of the published ones."""
    if not rows:
        return RelayResult()
    try:
        out = publish_rows(publisher, rows, first=first)
    except Exception:
        # e.g. an encoder error or a publisher bug: release the batch (nothing was marked, no
        # transaction is open), then let the caller see the error.
        record_outcomes(Outcomes(untried=[r.id for r in rows]), rows, owner=owner, now=now)
        raise
    return _settled(out, rows, owner=owner, now=now, subscribers=subscribers,
                    dispatch_types=dispatch_types, lease_s=lease_s, max_attempts=max_attempts)


def relay_stream(publisher: Publisher, claim: Claim, *, limit: int,
                 owner: str, clock: Callable[[], datetime],
                 subscribers: dict[str, list[Subscriber]] | None = None,
                 lease_s: float = DEFAULT_LEASE_S, max_attempts: int = MAX_ATTEMPTS,
                 more: Callable[[], bool] = lambda: True) -> Iterator[RelayResult]:
    """Relay batch after batch until nothing is due, `more()` says stop, or the broker
    fails. With a publisher that can send without waiting (`start_many` and `finish_many`),
    database and broker work overlap in ONE thread: while a batch's confirms are on their way,
    ONE round trip marks the batch before it and leases the batch after it (`claim(marks)`).
    Nothing is held across the wait but row leases; the next batch cannot take a later row of
    an aggregate in flight (held back), which is claimed once the batch in flight is marked.
    A batch with refused rows is marked on its own (backoff and parking need the row counts)."""
    subs = subscribers or {}
    types = frozenset(subs)
    start = getattr(publisher, "start_many", None)
    finish = getattr(publisher, "finish_many", None)
    pipelined = start is not None and finish is not None
    current = claim(None)
    upcoming: list[Any] = []
    ticket = None
    waiting: _Waiting | None = None  # published, its marks to ride with the next claim
    try:
        if pipelined and current:
            ticket = start([envelope(r) for r in _waves(current)[0]])
        while current:
            if pipelined and more():
                upcoming = claim(waiting.marks if waiting else None)  # `current` in flight
                if waiting is not None:
                    done_before, waiting = waiting, None
                    yield _reacted(done_before, subs)
            elif waiting is not None:
                done_before, waiting = waiting, None
                yield _settled(done_before.out, done_before.rows, owner=owner,
                               now=done_before.marks.now, subscribers=subs, lease_s=lease_s,
                               max_attempts=max_attempts)
            first = None if ticket is None else (lambda t=ticket: finish(t))
            out = publish_rows(publisher, current, first=first)
            done, current, ticket = current, [], None
            if upcoming and not out.broker_error:
                ticket = start([envelope(r) for r in _waves(upcoming)[0]])
                current, upcoming = upcoming, []
            marks = (marks_for(out, now=clock(), dispatch_types=types,
                               dispatching_now=bool(subs), lease_s=lease_s)
                     if current else None)
            if marks is not None:
                waiting = _Waiting(out, done, marks)
            else:
                yield _settled(out, done, owner=owner, now=clock(), subscribers=subscribers,
                               lease_s=lease_s, max_attempts=max_attempts)
            if out.broker_error:
                break
            if not current and more():
                # after the mark: rows held behind the marked batch are due now
                current = claim(None)
                if pipelined and current:
                    ticket = start([envelope(r) for r in _waves(current)[0]])
    finally:
        # A confirmed batch still waiting for its marks gets them; rows never sent go back at
        # once; rows sent but not confirmed (an error while their confirms were awaited) stay
        # leased: they go out again when the lease expires.
        unsent = [r.id for r in upcoming] + ([r.id for r in current] if ticket is None else [])
        if waiting is not None or unsent:
            with unscoped(), bookkeeping():
                if waiting is not None:
                    waiting.marks.apply(owner)
                if unsent:
                    now = clock()
                    Marks(now=now, hold=now, untried=unsent).apply(owner)


@dataclass
class _Waiting:
    out: Outcomes
    rows: list[Any]
    marks: Marks


def _result(out: Outcomes, rows: list[Any]) -> RelayResult:
    return RelayResult(claimed=len(rows), broker_error=out.broker_error,
                       failures=out.failures, failed=len(out.failures),
                       published_ids=[str(r.id) for r in out.published],
                       published=len(out.published))


def _reacted(batch: _Waiting, subs: dict[str, list[Subscriber]]) -> RelayResult:
    """A batch whose marks went out with the next claim: run its reactions."""
    result = _result(batch.out, batch.rows)
    reacting = [r for r in batch.out.published if reacts(r, subs)]
    if reacting:
        result.dispatched, result.dispatch_failed = dispatch_rows(reacting, subs,
                                                                  now=batch.marks.now)
    return result


def _settled(out: Outcomes, rows: list[Any], *, owner: str, now: datetime,
             subscribers: dict[str, list[Subscriber]] | None, lease_s: float,
             max_attempts: int, dispatch_types: Iterable[str] | None = None) -> RelayResult:
    """Mark a published batch and run its reactions."""
    subs = subscribers or {}
    types = frozenset(dispatch_types if dispatch_types is not None else subs)
    result = _result(out, rows)
    result.parked = record_outcomes(out, rows, owner=owner, now=now, dispatch_types=types,
                                    dispatching_now=bool(subs), lease_s=lease_s,
                                    max_attempts=max_attempts)
    reacting = [r for r in out.published if reacts(r, subs)]
    if reacting:
        result.dispatched, result.dispatch_failed = dispatch_rows(reacting, subs, now=now)
    return result


def relay_batch(publisher: Publisher, *, limit: int = 500, now: datetime | None = None,
                subscribers: dict[str, list[Subscriber]] | None = None,
                ids: Sequence[uuid.UUID] | None = None, env_id: uuid.UUID | None = None,
                lease_s: float = DEFAULT_LEASE_S, dispatch_types: Iterable[str] | None = None,
                max_attempts: int = MAX_ATTEMPTS) -> RelayResult:
    """One batch by a short-lived relay of its own (operations, replay, tests): lease what
    partitions are free, relay one batch, give everything back. `ids` replays those rows
    whatever their state (see claim_for_replay). The long-running relay is workers/relay.py.

    Raises:
        nothing from the broker: failures are recorded on the rows and in the result.
    """
    now = now or database_now()  # leases are compared across hosts: the database's clock
    owner = new_owner()
    lease = PartitionLease(owner, lease_s=lease_s)
    try:
        if ids is not None:
            rows = claim_for_replay(ids, owner=owner, now=now, lease_s=lease_s)
        else:
            lease.heartbeat(now)
            rows = claim_batch(owner=owner, limit=limit, now=now, lease_s=lease_s,
                               env_id=env_id)
        return relay_rows(publisher, rows, owner=owner, now=now, subscribers=subscribers,
                          dispatch_types=dispatch_types, lease_s=lease_s,
                          max_attempts=max_attempts)
    finally:
        lease.release()


__all__ = ["BASE_BACKOFF_S", "BEHIND_PARKED_S", "DEFAULT_LEASE_S", "MAX_ATTEMPTS", "MAX_BACKOFF_S",
           "MAX_DISPATCH_ATTEMPTS", "BrokerUnavailable", "Claim", "ClaimedRow", "Marks",
           "Outcomes", "PartitionLease", "PublishRejected", "Publisher", "RelayResult",
           "Subscriber", "bookkeeping", "claim_batch", "claim_dispatch", "claim_for_replay",
           "reaction_parked", "release_behind", "replay_reactions",
           "compute_backoff", "dispatch_rows", "marks_for", "new_owner", "publish_rows",
           "record_outcomes", "relay_batch", "relay_rows", "relay_stream", "update_chosen"]
