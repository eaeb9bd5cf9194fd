"""Operator queries over the outbox: status, list (parked rows too), replay selection, requeue,
purge, and the housekeeping the relay runs periodically. Cross-env (`unscoped()`); reads and
short writes only, never the broker. Connections belong to the caller (the CLI command)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import peewee

from pms.db.database import db, write_begin_args
from pms.db.scope import unscoped
from pms.models.platform import AuditEntry, OutboxEvent
from pms.relay.clock import database_now


@dataclass
class OutboxStatus:
    backlog: int
    due: int
    oldest_unpublished_age_s: float | None
    published: int
    parked: int
    dispatch_pending: int
    dispatch_parked: int
    failing: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {"backlog": self.backlog, "due": self.due,
                "oldest_unpublished_age_s": self.oldest_unpublished_age_s,
                "published": self.published, "parked": self.parked,
                "dispatch_pending": self.dispatch_pending,
                "dispatch_parked": self.dispatch_parked, "failing": self.failing}


def _as_aware(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _pending() -> Any:
    return OutboxEvent.published_at.is_null() & OutboxEvent.parked_at.is_null()


def _dispatch_parked() -> Any:
    from pms.relay.dispatch import reaction_parked

    return reaction_parked()


def outbox_status(*, env_id: uuid.UUID | None = None, now: datetime | None = None) -> OutboxStatus:
    """Backlog (pending, not parked), due now, oldest pending age, parked rows, reactions still
    to run or parked, and failures by type (optionally for one env)."""
    now = now or database_now()
    with unscoped(), db.atomic():
        base = OutboxEvent.select()
        if env_id is not None:
            base = base.where(OutboxEvent.env_id == env_id)
        pending = base.where(_pending())
        backlog = pending.count()
        due = pending.where(OutboxEvent.next_attempt_at <= now).count()
        oldest = _as_aware(pending.select(peewee.fn.MIN(OutboxEvent.created_at)).scalar())
        published = base.where(OutboxEvent.published_at.is_null(False)).count()
        parked = base.where(OutboxEvent.parked_at.is_null(False)).count()
        undispatched = base.where(OutboxEvent.published_at.is_null(False)
                                  & OutboxEvent.dispatched_at.is_null())
        dispatch_pending = undispatched.where(OutboxEvent.dispatch_next_at.is_null(False)).count()
        dispatch_parked = base.where(_dispatch_parked()).count()
        failing = [
            {"type": r["type"], "rows": r["n"], "max_attempts": r["attempts"],
             "last_error": r["err"]}
            for r in base.where(OutboxEvent.published_at.is_null()
                                & (OutboxEvent.attempts > 0)).select(
                OutboxEvent.type, peewee.fn.COUNT(OutboxEvent.id).alias("n"),
                peewee.fn.MAX(OutboxEvent.attempts).alias("attempts"),
                peewee.fn.MAX(OutboxEvent.last_error).alias("err"),
            ).group_by(OutboxEvent.type).order_by(OutboxEvent.type).dicts()
        ]
    age = round((now - oldest).total_seconds(), 3) if oldest else None
    return OutboxStatus(backlog=backlog, due=due, oldest_unpublished_age_s=age,
                        published=published, parked=parked, dispatch_pending=dispatch_pending,
                        dispatch_parked=dispatch_parked, failing=failing)


@dataclass(frozen=True)
class EventFilter:
    """Which outbox rows an operator means (every field optional, combined with AND).
    `parked`: rows parked after too many attempts, or whose reactions were parked."""

    ids: tuple[uuid.UUID, ...] = ()
    env_id: uuid.UUID | None = None
    type: str | None = None
    aggregate: str | None = None
    published: bool | None = None
    parked: bool = False
    since: datetime | None = None
    until: datetime | None = None

    def is_empty(self) -> bool:
        return not (self.ids or self.env_id or self.type or self.aggregate or self.parked
                    or self.since or self.until)


def _filtered(flt: EventFilter) -> peewee.ModelSelect:
    query = OutboxEvent.select()
    if flt.ids:
        query = query.where(OutboxEvent.id.in_(list(flt.ids)))
    if flt.env_id:
        query = query.where(OutboxEvent.env_id == flt.env_id)
    if flt.type:
        query = query.where(OutboxEvent.type == flt.type)
    if flt.aggregate:
        # An aggregate id (the CloudEvent subject) or an aggregate type ("reservation").
        query = query.where((OutboxEvent.subject == flt.aggregate)
                            | (OutboxEvent.aggregate_type == flt.aggregate))
    if flt.published is True:
        query = query.where(OutboxEvent.published_at.is_null(False))
    elif flt.published is False:
        query = query.where(OutboxEvent.published_at.is_null())
    if flt.parked:
        query = query.where(OutboxEvent.parked_at.is_null(False) | _dispatch_parked())
    if flt.since:
        query = query.where(OutboxEvent.created_at >= flt.since)
    if flt.until:
        query = query.where(OutboxEvent.created_at < flt.until)
    return query.order_by(OutboxEvent.created_at, OutboxEvent.id)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def event_summary(row: OutboxEvent) -> dict[str, Any]:
    if row.parked_at:
        state = "parked"
    elif row.published_at is None:
        state = "pending"
    elif (row.dispatched_at is None and row.dispatch_next_at is None
          and row.dispatch_attempts > 0):
        state = "reactions_parked"
    elif row.dispatched_at is None:
        state = "reactions_pending"
    else:
        state = "published"
    return {"id": str(row.id), "env_id": str(row.env_id), "type": row.type,
            "subject": row.subject, "aggregate_type": row.aggregate_type,
            "aggregate_version": row.aggregate_version, "state": state,
            "created_at": _iso(row.created_at), "published_at": _iso(row.published_at),
            "parked_at": _iso(row.parked_at), "dispatched_at": _iso(row.dispatched_at),
            "attempts": row.attempts, "dispatch_attempts": row.dispatch_attempts,
            "last_error": row.last_error}


def list_events(flt: EventFilter, *, limit: int = 100) -> list[dict[str, Any]]:
    """Outbox rows matching `flt`, oldest first, as plain dicts."""
    with unscoped(), db.atomic():
        return [event_summary(r) for r in _filtered(flt).limit(limit)]


def select_for_replay(flt: EventFilter) -> list[uuid.UUID]:
    """Ids of the rows a replay would re-publish (refuses an empty filter)."""
    if flt.is_empty():
        raise ValueError("a replay needs at least one filter (ids, env, type, aggregate, "
                         "parked, time)")
    with unscoped(), db.atomic():
        return [r.id for r in _filtered(flt).select(OutboxEvent.id, OutboxEvent.created_at)]


def parked_reactions(ids: Sequence[uuid.UUID]) -> tuple[list[uuid.UUID], list[uuid.UUID]]:
    """Of these rows: those whose reactions are parked, and those parked ONLY for their
    reactions (published; their replay re-runs the reactions, not the publish)."""
    from pms.relay.dispatch import reaction_parked

    parked, only = [], []
    with unscoped(), db.atomic():
        for chunk in _chunks(list(ids), 500):
            for r in (OutboxEvent.select(OutboxEvent.id, OutboxEvent.published_at,
                                         OutboxEvent.parked_at)
                      .where(OutboxEvent.id.in_(chunk) & reaction_parked())):
                parked.append(r.id)
                if r.published_at is not None and r.parked_at is None:
                    only.append(r.id)
    return parked, only


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def requeue(ids: Sequence[uuid.UUID], *, now: datetime | None = None) -> int:
    """Make rows pending again (parked ones too), keeping their ids (consumers deduplicate on
    them); the running relay publishes them, then the later rows of their streams that a
    parked row held back. Reactions that already ran are not repeated."""
    from pms.relay.claim import release_behind

    now = now or database_now()
    count = 0
    requeued: list[Any] = []
    with unscoped(), db.atomic(**write_begin_args()):
        for chunk in _chunks(list(ids), 500):
            requeued += list(OutboxEvent.update(
                published_at=None, parked_at=None, attempts=0, last_error=None,
                next_attempt_at=now, lease_owner=None, lease_until=None,
            ).where(OutboxEvent.id.in_(chunk)).returning(
                OutboxEvent.env_id, OutboxEvent.aggregate_type,
                OutboxEvent.subject).namedtuples().execute())
    count = len(requeued)
    release_behind(requeued, now=now)
    return count


def purge_published(*, older_than: timedelta, now: datetime | None = None) -> int:
    """Delete rows published before `now - older_than` (the retention period) whose reactions
    are done. Parked rows stay until an operator replays them."""
    cutoff = (now or database_now()) - older_than
    with unscoped(), db.atomic(**write_begin_args()):
        return OutboxEvent.delete().where(
            OutboxEvent.published_at.is_null(False) & (OutboxEvent.published_at < cutoff)
            & OutboxEvent.dispatched_at.is_null(False)).execute()


def known_envs() -> list[uuid.UUID]:
    """Every env that has outbox or audit rows (the cross-env tables the relay may read)."""
    with unscoped(), db.atomic():
        envs = {r.env_id for r in OutboxEvent.select(OutboxEvent.env_id).distinct()}
        envs |= {r.env_id for r in AuditEntry.select(AuditEntry.env_id).distinct()}
    return sorted(envs, key=str)


def purge_idempotency(env_ids: Iterable[uuid.UUID], *, now: datetime | None = None) -> int:
    """Purge expired Idempotency-Key records, env by env (the table is not cross-env)."""
    from pms.services.idempotency import purge_expired

    return _per_env(purge_expired, env_ids, now)


def purge_kiosk_sessions(env_ids: Iterable[uuid.UUID], *, now: datetime | None = None) -> int:
    """Purge dead kiosk session rows past their retention, env by env."""
    from pms.services.kiosk.kiosk_sessions import purge_dead_sessions

    return _per_env(purge_dead_sessions, env_ids, now)


def _per_env(purge: Any, env_ids: Iterable[uuid.UUID], now: datetime | None) -> int:
    from pms.context import system_ctx

    now = now or database_now()
    return sum(purge(system_ctx(env, sub="outbox-housekeeping").with_(now=now))
               for env in env_ids)


__all__ = ["EventFilter", "OutboxStatus", "event_summary", "known_envs", "list_events",
           "outbox_status", "parked_reactions", "purge_idempotency", "purge_kiosk_sessions",
           "purge_published", "requeue",
           "select_for_replay"]
