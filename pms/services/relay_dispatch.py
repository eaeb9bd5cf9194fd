"""The internal subscribers' own cursor: reactions (Dramatiq enqueues) of published rows.

They run after the bus publish and are recorded apart (dispatched_at, dispatch_attempts,
dispatch_next_at), so a failing reaction is retried alone and never republishes the external
event. Reactions left behind (backing off, or by a relay that stopped) are leased by pushing
dispatch_next_at ahead; after `max_attempts` a reaction is parked (dispatch_next_at NULL).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from pms.db.scope import unscoped
from pms.events import envelope
from pms.models.platform import OutboxEvent
from pms.platform import trace
from pms.services.relay_claim import _CLAIM_FIELDS, _any, _leased_partitions
from pms.services.relay_core import (
    DEFAULT_LEASE_S,
    MAX_DISPATCH_ATTEMPTS,
    Subscriber,
    bookkeeping,
    compute_backoff,
    update_chosen,
)
from pms.services.relay_marks import _ts, _update_ids


def claim_dispatch(*, owner: str, types: Iterable[str], limit: int, now: datetime,
                   lease_s: float = DEFAULT_LEASE_S, env_id: uuid.UUID | None = None) -> list[Any]:
    """Published rows whose reactions are due (a failed one backing off, or left by a relay
    that stopped), leased by pushing dispatch_next_at `lease_s` ahead."""
    types = sorted(types)
    if not types:
        return []
    with unscoped():
        return _claim_reactions(owner=owner, types=types, limit=limit, now=now,
                                lease_s=lease_s, env_id=env_id)


def _claim_reactions(*, owner: str, types: list[str], limit: int, now: datetime,
                     lease_s: float, env_id: uuid.UUID | None) -> list[Any]:
    where = (OutboxEvent.published_at.is_null(False) & OutboxEvent.dispatched_at.is_null()
             & (OutboxEvent.dispatch_next_at <= now) & OutboxEvent.type.in_(types)
             & OutboxEvent.partition.in_(_leased_partitions(owner, now)))
    if env_id is not None:
        where &= OutboxEvent.env_id == env_id
    if not _any(where):
        return []
    candidates = (OutboxEvent.select(OutboxEvent.id).where(where)
                  .order_by(OutboxEvent.published_at, OutboxEvent.id).limit(limit))
    sets = {OutboxEvent.dispatch_next_at: now + timedelta(seconds=lease_s)}
    with unscoped(), bookkeeping():
        return list(update_chosen(OutboxEvent, OutboxEvent.id, candidates, sets)
                    .returning(*_CLAIM_FIELDS).namedtuples().execute())


def dispatch_rows(rows: list[Any], subscribers: dict[str, list[Subscriber]], *, now: datetime,
                  max_attempts: int = MAX_DISPATCH_ATTEMPTS) -> tuple[int, int]:
    """Run the reactions of published rows, then record each row's outcome. Returns
    (dispatched, failed). A failure backs the reaction off (and parks it after `max_attempts`:
    dispatch_next_at NULL); the row stays published."""
    ok: list[Any] = []
    failed: list[tuple[Any, str]] = []
    for row in rows:
        event = envelope(row)
        try:
            with trace.use(event.get("traceparent")):  # what the reactions send carries it
                for subscriber in subscribers.get(row.type, ()):
                    subscriber(event)
        except Exception as exc:  # noqa: BLE001 - recorded on the row, retried with backoff
            failed.append((row, f"{type(exc).__name__}: {exc}"[:1000]))
            continue
        ok.append(row.id)
    with unscoped(), bookkeeping():
        _update_ids('"dispatched_at" = %s', [_ts(now)], ok, None)
        for row, error in failed:
            attempts = row.dispatch_attempts + 1
            retry = (None if attempts >= max_attempts
                     else _ts(now + timedelta(seconds=compute_backoff(attempts))))
            _update_ids('"dispatch_attempts" = %s, "last_error" = %s, "dispatch_next_at" = %s',
                        [attempts, error, retry], [row.id], None)
    return len(ok), len(failed)


__all__ = ["claim_dispatch", "dispatch_rows"]
