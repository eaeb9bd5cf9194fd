"""The outbox relay's database side: claim, mark, back off, report, replay, purge.

This is the one module allowed to use `unscoped()`: the relay works across every tenant env
(PostgreSQL RLS lets it through for the outbox and audit tables only, see pms.db.migrator). The
broker is never called from here; `relay_batch` is handed a publisher by its caller (workers/).

Claiming: on PostgreSQL, a batch is locked with `FOR UPDATE SKIP LOCKED` in creation order and
the transaction stays open while the batch is published, so a relay that dies (even `kill -9`)
between the broker's confirm and the row update leaves the rows unpublished: they go out again,
with the same id (at least once). SQLite has no row locks: it reads the batch in a short
transaction, publishes outside any transaction (a long write transaction would stall every
request) and marks afterwards; one relay per process, serialized by a lock.
"""

from __future__ import annotations

import queue
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import peewee

from pms.db.database import db, is_postgres, write_begin_args
from pms.db.fields import utcnow
from pms.db.scope import unscoped
from pms.events import envelope
from pms.models.platform import AuditEntry, IdempotencyRecord, OutboxEvent

MAX_BACKOFF_S = 60.0
BASE_BACKOFF_S = 0.5
_sqlite_relay_lock = threading.Lock()


class PublishRejected(Exception):
    """The broker refused one message (unroutable return, nack): back off that row only."""


class BrokerUnavailable(Exception):
    """The broker cannot be reached or stopped answering: back off the whole relay."""


class Publisher(Protocol):
    def publish(self, event: dict[str, Any], *, routing_key: str | None = None) -> None:
        """Publish one CloudEvent and return once the broker confirmed it.

        Raises PublishRejected (row-level) or BrokerUnavailable (connection-level).
        A publisher may also offer `publish_many(events) -> [None | exception]` (a whole batch
        in flight, one outcome per event): the relay uses it when present.
        """


Subscriber = Callable[[dict[str, Any]], None]


@dataclass
class RelayResult:
    claimed: int = 0
    published: int = 0
    failed: int = 0
    broker_error: str | None = None
    published_ids: list[str] = field(default_factory=list)
    failures: dict[uuid.UUID, str] = field(default_factory=dict)


def compute_backoff(attempts: int) -> float:
    """Seconds before the next try of a row that failed `attempts` times (capped)."""
    return min(BASE_BACKOFF_S * (2 ** max(attempts - 1, 0)), MAX_BACKOFF_S)


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(UTC)


def _due(now: datetime) -> Any:
    return (OutboxEvent.published_at.is_null()) & (OutboxEvent.next_attempt_at <= now)


def relay_batch(publisher: Publisher, *, limit: int = 500, now: datetime | None = None,
                subscribers: dict[str, list[Subscriber]] | None = None,
                ids: Sequence[uuid.UUID] | None = None,
                env_id: uuid.UUID | None = None) -> RelayResult:
    """Publish one batch of due outbox rows, oldest first, and mark the confirmed ones.

    After the broker confirmed a row, the internal subscribers of its type run (they enqueue
    reactions such as housekeeping tasks); a subscriber failure backs the row off like a
    publish failure, so the reaction is as reliable as the event itself.

    Args:
        publisher: confirms each publish (see Publisher).
        limit: rows per batch.
        now: the time that decides which rows are due.
        subscribers: event type -> callables given the CloudEvent.
        ids: restrict the batch to these rows (replay).
        env_id: restrict the batch to one env (operations, tests).
    Raises:
        nothing from the broker: failures are recorded on the rows and in the result.
    """
    now = _now(now)
    with unscoped():
        db.connect(reuse_if_open=True)
        if is_postgres():
            with db.atomic():
                rows = list(_claim_query(now, limit, ids, env_id)
                            .for_update("FOR UPDATE SKIP LOCKED").namedtuples())
                result = _publish_rows(publisher, rows, now, subscribers or {})
                _record(result, rows, now)
            return result
        with _sqlite_relay_lock:
            with db.atomic():
                rows = list(_claim_query(now, limit, ids, env_id).namedtuples())
            result = _publish_rows(publisher, rows, now, subscribers or {})
            with db.atomic(**write_begin_args()):
                _record(result, rows, now)
            return result


# What the envelope and the bookkeeping need (rows come back as named tuples: no model
# instances on the relay's hot path).
_CLAIM_FIELDS = (OutboxEvent.id, OutboxEvent.env_id, OutboxEvent.type, OutboxEvent.source,
                 OutboxEvent.subject, OutboxEvent.property_id, OutboxEvent.idempotency_key,
                 OutboxEvent.time, OutboxEvent.traceparent, OutboxEvent.aggregate_version,
                 OutboxEvent.attempts, OutboxEvent.data)


def _claim_query(now: datetime, limit: int, ids: Sequence[uuid.UUID] | None,
                 env_id: uuid.UUID | None) -> peewee.ModelSelect:
    query = OutboxEvent.select(*_CLAIM_FIELDS).where(_due(now))
    if env_id is not None:
        query = query.where(OutboxEvent.env_id == env_id)
    if ids is not None:
        query = query.where(OutboxEvent.id.in_(list(ids)))
    return query.order_by(OutboxEvent.created_at, OutboxEvent.id).limit(limit)


def _publish_rows(publisher: Publisher, rows: list[Any], now: datetime,
                  subscribers: dict[str, list[Subscriber]]) -> RelayResult:
    result = RelayResult(claimed=len(rows))
    failures = result.failures
    events = [envelope(row) for row in rows]
    publish_many = getattr(publisher, "publish_many", None)
    if publish_many is not None:
        outcomes: list[Exception | None] = publish_many(events)
    else:
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
    for row, event, outcome in zip(rows, events, outcomes, strict=True):
        if isinstance(outcome, BrokerUnavailable):
            # Not confirmed: leave the row as it is; the relay backs off as a whole.
            result.broker_error = result.broker_error or str(outcome) or "broker unavailable"
            continue
        try:
            if outcome is not None:
                raise outcome
            for subscriber in subscribers.get(row.type, ()):
                subscriber(event)
        except Exception as exc:  # noqa: BLE001 - recorded on the row, retried with backoff
            failures[row.id] = f"{type(exc).__name__}: {exc}"[:1000]
            continue
        result.published_ids.append(str(row.id))
    result.published = len(result.published_ids)
    result.failed = len(failures)
    return result


def _mark_published(ids: list[str], marked: datetime) -> None:
    """Stamp `published_at` on these rows (and clear their error).

    PERF (PostgreSQL): one array parameter instead of an IN list of 500; peewee compiling the
    list cost a quarter of the relay's CPU."""
    if is_postgres():
        meta = OutboxEvent._meta
        db.execute_sql(
            f'UPDATE "{meta.table_name}" SET "published_at" = %s, "last_error" = NULL '
            'WHERE "id" = ANY(%s::uuid[])',
            (OutboxEvent.published_at.db_value(marked), ids))
        return
    for chunk in _chunks([uuid.UUID(i) for i in ids], 500):
        OutboxEvent.update(published_at=marked, last_error=None).where(
            OutboxEvent.id.in_(chunk)).execute()


def _record(result: RelayResult, rows: list[Any], now: datetime) -> None:
    if result.published_ids:
        _mark_published(result.published_ids, utcnow())
    failures = result.failures
    by_id = {row.id: row for row in rows}
    for row_id, error in failures.items():
        attempts = by_id[row_id].attempts + 1
        OutboxEvent.update(
            attempts=attempts, last_error=error,
            next_attempt_at=now + timedelta(seconds=compute_backoff(attempts)),
        ).where(OutboxEvent.id == row_id).execute()


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]



class _Abandon(Exception):
    """The publishing side gave up on a claimed batch: roll its transaction back."""


def _hold_batches(handoff: queue.Queue[Any], stop: threading.Event, *, now: datetime,
                  limit: int, env_id: uuid.UUID | None) -> None:
    """One holder of relay_pipelined: claim, hand over, wait for the outcome, mark, commit."""
    try:
        with unscoped():
            db.connect(reuse_if_open=True)
            while not stop.is_set():
                try:
                    with db.atomic():
                        rows = list(_claim_query(now, limit, None, env_id)
                                    .for_update("FOR UPDATE SKIP LOCKED").namedtuples())
                        if not rows:
                            return
                        reply: queue.Queue[Any] = queue.Queue(maxsize=1)
                        handoff.put((rows, reply))
                        result = reply.get()
                        if result is None:
                            raise _Abandon
                        _record(result, rows, now)
                except _Abandon:
                    return
                if result.broker_error or len(rows) < limit:
                    return
    except Exception as exc:  # noqa: BLE001 - handed to the caller, which reports it
        handoff.put(exc)
    finally:
        handoff.put(None)
        db.close()


def relay_pipelined(publisher: Publisher, *, limit: int = 500, now: datetime | None = None,
                    subscribers: dict[str, list[Subscriber]] | None = None,
                    env_id: uuid.UUID | None = None) -> list[RelayResult]:
    """Drain every due row (PostgreSQL), overlapping database and broker work.

    Two holder threads take turns: each claims a batch in its own transaction (FOR UPDATE
    SKIP LOCKED, creation order), hands it to the calling thread, which publishes it (the only
    thread that touches the broker connection), then records the outcome and commits. While one
    batch waits for its confirms the other holder is already claiming the next batch or marking
    the previous one. The per-batch guarantees are those of `relay_batch`: a row is marked only
    after its confirm, in the transaction that locked it. Stops at a broker error.
    """
    now = _now(now)
    subs = subscribers or {}
    handoff: queue.Queue[Any] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def holder() -> None:
        _hold_batches(handoff, stop, now=now, limit=limit, env_id=env_id)

    results: list[RelayResult] = []
    threads = [threading.Thread(target=holder, name=f"pms-relay-holder-{n}", daemon=True)
               for n in range(2)]
    threads[0].start()
    running, error = 1, None
    while running:
        item = handoff.get()
        if item is None:
            running -= 1
            continue
        if isinstance(item, Exception):
            error = item
            stop.set()
            continue
        rows, reply = item
        if not threads[1].is_alive() and threads[1].ident is None and not stop.is_set():
            threads[1].start()  # the second holder claims only after the first has its batch
            running += 1
        if stop.is_set():
            reply.put(None)
            continue
        result = _publish_rows(publisher, rows, now, subs)
        results.append(result)
        if result.broker_error:
            stop.set()
        reply.put(result)
    for thread in threads:
        if thread.ident is not None:
            thread.join(timeout=30)
    if error is not None:
        raise error
    return results

# -- audit push ----------------------------------------------------------------------------------

def audit_event(row: AuditEntry) -> dict[str, Any]:
    """The CloudEvent of an audit-journal row (type hotel:pms:audit:recorded)."""
    created = row.created_at.astimezone(UTC)
    return {
        "specversion": "1.0", "id": str(row.id), "source": "hotel-pms",
        "type": "hotel:pms:audit:recorded", "subject": row.target_id,
        "time": created.isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json", "envid": str(row.env_id),
        "idempotencykey": f"audit:{row.id}",
        **({"propertyid": str(row.property_id)} if row.property_id else {}),
        "data": {"action": row.action, "target_type": row.target_type,
                 "target_id": row.target_id, "actor_sub": row.actor_sub,
                 "actor_kind": row.actor_kind, "request_id": row.request_id,
                 "before": row.before, "after": row.after, "reason": row.reason},
    }


def push_audit_batch(publisher: Publisher, *, limit: int = 500,
                     routing_key: str = "hotel.pms.audit.recorded",
                     env_id: uuid.UUID | None = None) -> RelayResult:
    """Push unpushed audit rows (oldest first) and stamp `pushed_at` after the confirm.

    Fail open: a broker error stops the batch and leaves the rest for the next sweep.
    """
    result = RelayResult()
    with unscoped():
        db.connect(reuse_if_open=True)
        with db.atomic():
            query = (AuditEntry.select().where(AuditEntry.pushed_at.is_null())
                     .order_by(AuditEntry.created_at, AuditEntry.id).limit(limit))
            if env_id is not None:
                query = query.where(AuditEntry.env_id == env_id)
            if is_postgres():
                query = query.for_update("FOR UPDATE SKIP LOCKED")
            rows = list(query)
        result.claimed = len(rows)
        events = [audit_event(row) for row in rows]
        publish_many = getattr(publisher, "publish_many", None)
        if publish_many is not None and routing_key == "hotel.pms.audit.recorded":
            # The first row alone probes whether anyone takes audit rows; if nobody does, the
            # sweep stops there instead of sending the whole batch back and forth every time.
            outcomes = publish_many(events[:1]) if events else []
            if outcomes and outcomes[0] is None:
                outcomes += publish_many(events[1:])
        else:
            outcomes = []
            for event in events:
                try:
                    publisher.publish(event, routing_key=routing_key)
                    outcomes.append(None)
                except (BrokerUnavailable, PublishRejected) as exc:
                    outcomes.append(exc)
                    break
        for row, outcome in zip(rows, outcomes, strict=False):
            if outcome is None:
                result.published_ids.append(str(row.id))
            elif isinstance(outcome, BrokerUnavailable):
                result.broker_error = result.broker_error or str(outcome) or "unavailable"
            else:
                # Nobody takes audit rows right now: fail open; the next sweep tries again.
                result.failed += 1
        if result.published_ids:
            with db.atomic(**write_begin_args()):
                for chunk in _chunks([uuid.UUID(i) for i in result.published_ids], 500):
                    AuditEntry.update(pushed_at=utcnow()).where(AuditEntry.id.in_(chunk)).execute()
    result.published = len(result.published_ids)
    return result


# -- operations: status, list, replay, purge -----------------------------------------------------

@dataclass
class OutboxStatus:
    backlog: int
    due: int
    oldest_unpublished_age_s: float | None
    published: int
    failing: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {"backlog": self.backlog, "due": self.due,
                "oldest_unpublished_age_s": self.oldest_unpublished_age_s,
                "published": self.published, "failing": self.failing}


def _as_aware(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def outbox_status(*, env_id: uuid.UUID | None = None, now: datetime | None = None) -> OutboxStatus:
    """Backlog, oldest unpublished age and failures by type (optionally for one env)."""
    now = _now(now)
    with unscoped():
        db.connect(reuse_if_open=True)
        with db.atomic():
            base = OutboxEvent.select()
            if env_id is not None:
                base = base.where(OutboxEvent.env_id == env_id)
            pending = base.where(OutboxEvent.published_at.is_null())
            backlog = pending.count()
            due = pending.where(OutboxEvent.next_attempt_at <= now).count()
            oldest = _as_aware(pending.select(peewee.fn.MIN(OutboxEvent.created_at)).scalar())
            published = base.where(OutboxEvent.published_at.is_null(False)).count()
            failing = [
                {"type": r["type"], "rows": r["n"], "max_attempts": r["attempts"],
                 "last_error": r["err"]}
                for r in pending.where(OutboxEvent.attempts > 0).select(
                    OutboxEvent.type, peewee.fn.COUNT(OutboxEvent.id).alias("n"),
                    peewee.fn.MAX(OutboxEvent.attempts).alias("attempts"),
                    peewee.fn.MAX(OutboxEvent.last_error).alias("err"),
                ).group_by(OutboxEvent.type).order_by(OutboxEvent.type).dicts()
            ]
    age = round((now - oldest).total_seconds(), 3) if oldest else None
    return OutboxStatus(backlog=backlog, due=due, oldest_unpublished_age_s=age,
                        published=published, failing=failing)


@dataclass(frozen=True)
class EventFilter:
    """Which outbox rows an operator means (every field optional, combined with AND)."""

    ids: tuple[uuid.UUID, ...] = ()
    env_id: uuid.UUID | None = None
    type: str | None = None
    aggregate: str | None = None
    published: bool | None = None
    since: datetime | None = None
    until: datetime | None = None

    def is_empty(self) -> bool:
        return not (self.ids or self.env_id or self.type or self.aggregate
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
    if flt.since:
        query = query.where(OutboxEvent.created_at >= flt.since)
    if flt.until:
        query = query.where(OutboxEvent.created_at < flt.until)
    return query.order_by(OutboxEvent.created_at, OutboxEvent.id)


def event_summary(row: OutboxEvent) -> dict[str, Any]:
    return {"id": str(row.id), "env_id": str(row.env_id), "type": row.type,
            "subject": row.subject, "aggregate_type": row.aggregate_type,
            "aggregate_version": row.aggregate_version,
            "created_at": row.created_at.isoformat(),
            "published_at": row.published_at.isoformat() if row.published_at else None,
            "attempts": row.attempts, "last_error": row.last_error}


def list_events(flt: EventFilter, *, limit: int = 100) -> list[dict[str, Any]]:
    """Outbox rows matching `flt`, oldest first, as plain dicts."""
    with unscoped():
        db.connect(reuse_if_open=True)
        with db.atomic():
            return [event_summary(r) for r in _filtered(flt).limit(limit)]


def select_for_replay(flt: EventFilter) -> list[uuid.UUID]:
    """Ids of the rows a replay would re-publish (refuses an empty filter)."""
    if flt.is_empty():
        raise ValueError("a replay needs at least one filter (ids, env, type, aggregate, time)")
    with unscoped():
        db.connect(reuse_if_open=True)
        with db.atomic():
            return [r.id for r in _filtered(flt).select(OutboxEvent.id, OutboxEvent.created_at)]


def requeue(ids: Sequence[uuid.UUID], *, now: datetime | None = None) -> int:
    """Mark rows for re-publication, keeping their ids (consumers deduplicate on them)."""
    now = _now(now)
    count = 0
    with unscoped():
        db.connect(reuse_if_open=True)
        with db.atomic(**write_begin_args()):
            for chunk in _chunks(list(ids), 500):
                count += OutboxEvent.update(published_at=None, attempts=0, last_error=None,
                                            next_attempt_at=now).where(
                    OutboxEvent.id.in_(chunk)).execute()
    return count


def purge_published(*, older_than: timedelta, now: datetime | None = None) -> int:
    """Delete rows published before `now - older_than` (the retention period)."""
    cutoff = _now(now) - older_than
    with unscoped():
        db.connect(reuse_if_open=True)
        with db.atomic(**write_begin_args()):
            return OutboxEvent.delete().where(OutboxEvent.published_at.is_null(False)
                                              & (OutboxEvent.published_at < cutoff)).execute()


def known_envs() -> list[uuid.UUID]:
    """Every env that has outbox or audit rows (the cross-env tables the relay may read)."""
    with unscoped():
        db.connect(reuse_if_open=True)
        with db.atomic():
            envs = {r.env_id for r in OutboxEvent.select(OutboxEvent.env_id).distinct()}
            envs |= {r.env_id for r in AuditEntry.select(AuditEntry.env_id).distinct()}
    return sorted(envs, key=str)


def purge_idempotency(env_ids: Iterable[uuid.UUID], *, now: datetime | None = None) -> int:
    """Purge expired Idempotency-Key records, env by env (the table is not cross-env)."""
    from pms.api.idempotency import purge_expired
    from pms.context import system_ctx

    now = _now(now)
    total = 0
    for env in env_ids:
        total += purge_expired(system_ctx(env, sub="outbox-housekeeping").with_(now=now))
    return total


__all__ = ["BrokerUnavailable", "EventFilter", "IdempotencyRecord", "OutboxStatus",
           "PublishRejected", "Publisher", "RelayResult", "compute_backoff", "list_events",
           "outbox_status", "purge_idempotency", "purge_published", "push_audit_batch",
           "relay_batch", "requeue", "select_for_replay"]
