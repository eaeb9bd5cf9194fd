"""The internal subscribers' own cursor: reactions (Dramatiq enqueues) of outbox rows.

A row's reactions do not depend on the bus: they are due from the row's commit,
whether its publish is confirmed, refused, backing off, parked or waiting for a broker that is
down. The relay runs them right after a batch's publish for the rows it confirmed (the usual
case: one pass), and on this cursor for every other row of its partitions (`claim_dispatch` at
the end of each sweep). They are recorded apart (dispatched_at, dispatch_attempts,
dispatch_next_at): a failing reaction is retried alone and never republishes the external
event. A reaction never tried has dispatch_next_at NULL and dispatch_attempts 0 (due); one
being run or backing off has dispatch_next_at set (a lease, then the retry time); after
`max_attempts` it is parked (dispatch_next_at NULL, dispatch_attempts > 0), and only
`pms-cli outbox replay --parked` runs it again (`replay_reactions`), without a publish.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from contextlib import nullcontext
from datetime import datetime, timedelta
from typing import Any

from pms.db.scope import unscoped
from pms.events import envelope
from pms.models.platform import OutboxEvent
from pms.platform import trace
from pms.relay.claim import _CLAIM_FIELDS, _any, _leased_partitions
from pms.relay.core import (
    DEFAULT_LEASE_S,
    MAX_DISPATCH_ATTEMPTS,
    Subscriber,
    bookkeeping,
    compute_backoff,
    update_chosen,
)
from pms.relay.marks import _ts, _update_ids


def claim_dispatch(*, owner: str, types: Iterable[str], limit: int, now: datetime,
                   lease_s: float = DEFAULT_LEASE_S, env_id: uuid.UUID | None = None) -> list[Any]:
    """Rows whose reactions are due (never tried, whatever the state of their publish; a
    failed one backing off; or left by a relay that stopped), leased by pushing
    dispatch_next_at `lease_s` ahead."""
    types = sorted(types)
    if not types:
        return []
    with unscoped():
        return _claim_reactions(owner=owner, types=types, limit=limit, now=now,
                                lease_s=lease_s, env_id=env_id)


def _claim_reactions(*, owner: str, types: list[str], limit: int, now: datetime,
                     lease_s: float, env_id: uuid.UUID | None) -> list[Any]:
    where = (OutboxEvent.dispatched_at.is_null() & _reaction_due(now)
             & OutboxEvent.type.in_(types)
             & OutboxEvent.partition.in_(_leased_partitions(owner, now)))
    if env_id is not None:
        where &= OutboxEvent.env_id == env_id
    if not _any(where):
        return []
    candidates = (OutboxEvent.select(OutboxEvent.id).where(where)
                  .order_by(OutboxEvent.created_at, OutboxEvent.id).limit(limit))
    sets = {OutboxEvent.dispatch_next_at: now + timedelta(seconds=lease_s)}
    with unscoped(), bookkeeping():
        return list(update_chosen(OutboxEvent, OutboxEvent.id, candidates, sets)
                    .returning(*_CLAIM_FIELDS).namedtuples().execute())


def _reaction_due(now: datetime) -> Any:
    """Never tried (NULL, no attempt yet), or its lease or backoff ran out."""
    return ((OutboxEvent.dispatch_next_at <= now)
            | (OutboxEvent.dispatch_next_at.is_null() & (OutboxEvent.dispatch_attempts == 0)))


def reaction_parked() -> Any:
    """Rows whose reactions were parked (tried `max_attempts` times)."""
    return (OutboxEvent.dispatched_at.is_null() & OutboxEvent.dispatch_next_at.is_null()
            & (OutboxEvent.dispatch_attempts > 0))


def dispatch_rows(rows: list[Any], subscribers: dict[str, list[Subscriber]], *, now: datetime,
                  max_attempts: int = MAX_DISPATCH_ATTEMPTS) -> tuple[int, int]:
    """Run the reactions of rows, then record each row's outcome. Returns (dispatched, failed).
    A failure backs the reaction off (and parks it after `max_attempts`: dispatch_next_at NULL)
    and stops the pass: the rows after it are left due, untried (a failing enqueue is most often
    a broker that is down, which each row would wait for in turn). The publish is untouched.
    With `Reactions.batching`, the pass's messages go to the broker together at its end; the
    first row whose messages the broker did not take is the failure, the rows after it are
    left due, untried (their messages may have gone: reactions are idempotent)."""
    batching = getattr(subscribers, "batching", None)
    batch = batching() if batching is not None else None
    ok: list[Any] = []
    failed: list[tuple[Any, str]] = []
    untried: list[Any] = []
    for row in rows:
        if failed:
            untried.append(row.id)
            continue
        event = envelope(row)
        try:
            with trace.use(event.get("traceparent")):  # what the reactions send carries it
                with batch.row(row.id) if batch is not None else nullcontext():
                    for subscriber in subscribers.get(row.type, ()):
                        subscriber(event)
        except Exception as exc:  # noqa: BLE001 - recorded on the row, retried with backoff
            failed.append((row, f"{type(exc).__name__}: {exc}"[:1000]))
            continue
        ok.append(row)
    if batch is not None:
        refused = batch.flush()
        for index, row in enumerate(ok):
            if row.id in refused:
                untried.extend(r.id for r in ok[index + 1:])
                failed.insert(0, (row, refused[row.id][:1000]))
                ok = ok[:index]
                break
    with unscoped(), bookkeeping():
        _update_ids('"dispatched_at" = %s', [_ts(now)], [row.id for row in ok], None)
        _update_ids('"dispatch_next_at" = %s', [_ts(now)], untried, None)
        for row, error in failed:
            attempts = row.dispatch_attempts + 1
            retry = (None if attempts >= max_attempts
                     else _ts(now + timedelta(seconds=compute_backoff(attempts))))
            _update_ids('"dispatch_attempts" = %s, "last_error" = %s, "dispatch_next_at" = %s',
                        [attempts, error, retry], [row.id], None)
    return len(ok), len(failed)


def replay_reactions(ids: list[uuid.UUID], subscribers: dict[str, list[Subscriber]], *,
                     now: datetime, lease_s: float = DEFAULT_LEASE_S) -> tuple[int, int]:
    """Run again the parked reactions among these rows (and only them: no publish), from a
    fresh count of attempts. Returns (dispatched, failed)."""
    if not ids:
        return 0, 0
    sets = {OutboxEvent.dispatch_next_at: now + timedelta(seconds=lease_s),
            OutboxEvent.dispatch_attempts: 0}
    rows: list[Any] = []
    with unscoped():
        for start in range(0, len(ids), 500):
            chunk = list(ids[start:start + 500])
            candidates = OutboxEvent.select(OutboxEvent.id).where(
                OutboxEvent.id.in_(chunk) & reaction_parked()
                & OutboxEvent.type.in_(sorted(subscribers)))
            with bookkeeping():
                rows += list(update_chosen(OutboxEvent, OutboxEvent.id, candidates, sets)
                             .returning(*_CLAIM_FIELDS).namedtuples().execute())
    done, failed = 0, 0
    rows.sort(key=lambda r: (r.created_at, str(r.id)))
    while rows:
        batch, rows = rows[:500], rows[500:]
        ok, bad = dispatch_rows(batch, subscribers, now=now)
        done, failed = done + ok, failed + bad
        if bad:  # the rest stay due: the running relay takes them
            break
    return done, failed


__all__ = ["claim_dispatch", "dispatch_rows", "reaction_parked", "replay_reactions"]
