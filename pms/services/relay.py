"""The outbox relay's database side: partition leases, claim by row lease, publish, mark, back
off, park, and the internal subscribers' own cursor.

One of the few modules allowed `unscoped()`: the relay works across every tenant env (PostgreSQL
RLS lets it through for the outbox and audit tables only, see pms.db.migrator). It never opens or
closes a connection: its entry points (workers/relay.py, cli/outbox.py) hold the connection scope.

How a batch goes (no transaction is ever open across broker I/O):
1. Claim, in its own short committed transaction: `UPDATE ... SET lease_owner, lease_until WHERE
   id IN (SELECT ... FOR UPDATE SKIP LOCKED)` over the due rows of the partitions this relay
   holds (SQLite: the same statement under BEGIN IMMEDIATE, which excludes other processes).
2. Publish outside any transaction, in waves: the n-th due row of every aggregate goes in wave
   n, so a row is sent only after every earlier row of its aggregate was confirmed.
3. Mark, in a second short transaction, by id and only rows still leased by this relay:
   published; or backed off (attempts + 1), PARKED after `max_attempts`; or released untried.
A relay that dies leaves its rows leased: they are due again when the lease expires, and go
out again with the same id (at least once; duplicates only within the in-flight window).

Per-aggregate order: an aggregate's rows share a partition (crc32 of its id), a partition is
held by one live relay at a time (relay_partition), and a row is not claimed while an earlier
row of its aggregate is leased or backing off. A PARKED row does not hold its aggregate back:
an operator decides about it (`pms-cli outbox list --parked`, `replay`), and the later rows,
which carry the whole aggregate (CloudEvent data) with a higher aggregateversion, keep flowing.

Internal subscribers (reactions that enqueue Dramatiq messages) run after the bus publish on
their own cursor (dispatched_at, dispatch_attempts, dispatch_next_at): a failing reaction is
retried alone and never republishes the external event.
"""

from __future__ import annotations

import math
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

import peewee

from pms.db.database import db, is_postgres, write_begin_args
from pms.db.fields import utcnow
from pms.db.scope import unscoped
from pms.events import envelope
from pms.models.platform import OUTBOX_PARTITIONS, OutboxEvent
from pms.models.relay import RelayNode, RelayPartition

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


# -- partition leases ----------------------------------------------------------------------------

class PartitionLease:
    """This relay's share of the outbox partitions, kept by heartbeats.

    Each heartbeat (one short write transaction) renews the relay's node and partitions, takes
    free or expired partitions and, when another live relay holds fewer than its fair share
    (ceil(partitions / live relays)), gives its extras back between batches. A dead relay's
    partitions are taken over once its lease expires.
    """

    def __init__(self, owner: str, *, lease_s: float = DEFAULT_LEASE_S) -> None:
        self.owner = owner
        self.lease_s = lease_s
        self.owned: frozenset[int] = frozenset()
        self.target = OUTBOX_PARTITIONS
        self.renewed_at: datetime | None = None

    def due(self, now: datetime) -> bool:
        """Heartbeat now? Every third of the lease (and at once when it holds none yet)."""
        if self.renewed_at is None or len(self.owned) < self.target:
            return True
        return (now - self.renewed_at).total_seconds() >= self.lease_s / 3

    def heartbeat(self, now: datetime) -> frozenset[int]:
        until = now + timedelta(seconds=self.lease_s)
        with unscoped(), bookkeeping():
            (RelayNode.insert(owner=self.owner, started_at=now, expires_at=until)
             .on_conflict(conflict_target=[RelayNode.owner],
                          update={RelayNode.expires_at: until}).execute())
            RelayNode.delete().where(RelayNode.expires_at < now).execute()
            live = [n.owner for n in RelayNode.select(RelayNode.owner)]
            held: dict[str, int] = {o: 0 for o in live}
            for part in RelayPartition.select().where(RelayPartition.owner.is_null(False)
                                                      & (RelayPartition.expires_at > now)):
                held[part.owner] = held.get(part.owner, 0) + 1
            fair = math.ceil(OUTBOX_PARTITIONS / max(len(live), 1))
            hungry = any(held.get(o, 0) < OUTBOX_PARTITIONS // len(live) for o in live
                         if o != self.owner)
            self.target = fair if hungry else OUTBOX_PARTITIONS
            mine = sorted(p for (p,) in RelayPartition.update(expires_at=until)
                          .where(RelayPartition.owner == self.owner)
                          .returning(RelayPartition.partition).tuples().execute())
            if len(mine) > self.target:
                extra = mine[self.target:]
                RelayPartition.update(owner=None, expires_at=None).where(
                    RelayPartition.partition.in_(extra)
                    & (RelayPartition.owner == self.owner)).execute()
                mine = mine[:self.target]
            elif len(mine) < self.target:
                mine += [p for (p,) in self._take(self.target - len(mine), now, until)]
                # Whatever was free is taken; more only frees up when another relay gives
                # some back or dies, which the next timed heartbeat sees.
                self.target = len(mine)
        self.owned = frozenset(mine)
        self.renewed_at = now
        return self.owned

    def _take(self, count: int, now: datetime, until: datetime) -> Iterable[tuple[int]]:
        free = ((RelayPartition.owner.is_null()) | (RelayPartition.expires_at.is_null())
                | (RelayPartition.expires_at <= now))
        candidates = (RelayPartition.select(RelayPartition.partition).where(free)
                      .order_by(RelayPartition.partition).limit(count))
        return (update_chosen(RelayPartition, RelayPartition.partition, candidates,
                              {RelayPartition.owner: self.owner,
                               RelayPartition.expires_at: until})
                .returning(RelayPartition.partition).tuples().execute())

    def release(self) -> None:
        """Give back every partition, row lease and the node (a clean stop)."""
        with unscoped(), bookkeeping():
            RelayPartition.update(owner=None, expires_at=None).where(
                RelayPartition.owner == self.owner).execute()
            RelayNode.delete().where(RelayNode.owner == self.owner).execute()
            OutboxEvent.update(lease_owner=None, lease_until=None).where(
                OutboxEvent.lease_owner == self.owner).execute()
        self.owned = frozenset()
        self.renewed_at = None


# -- claim ---------------------------------------------------------------------------------------

# What the envelope and the bookkeeping need (rows come back as named tuples: no model
# instances on the relay's hot path).
_CLAIM_FIELDS = (OutboxEvent.id, OutboxEvent.env_id, OutboxEvent.type, OutboxEvent.source,
                 OutboxEvent.subject, OutboxEvent.property_id, OutboxEvent.idempotency_key,
                 OutboxEvent.time, OutboxEvent.traceparent, OutboxEvent.aggregate_version,
                 OutboxEvent.attempts, OutboxEvent.dispatch_attempts, OutboxEvent.created_at,
                 OutboxEvent.data)


def _lease_free(now: datetime) -> Any:
    return OutboxEvent.lease_until.is_null() | (OutboxEvent.lease_until <= now)


def _leased_partitions(owner: str, now: datetime) -> peewee.ModelSelect:
    return RelayPartition.select(RelayPartition.partition).where(
        (RelayPartition.owner == owner) & (RelayPartition.expires_at > now))


def _claim(where: Any, order: Sequence[Any], *, owner: str, limit: int, now: datetime,
           lease_s: float, set_extra: dict[Any, Any] | None = None) -> list[Any]:
    """Lease up to `limit` rows matching `where` in one short committed transaction."""
    candidates = OutboxEvent.select(OutboxEvent.id).where(where).order_by(*order).limit(limit)
    sets = {OutboxEvent.lease_owner: owner,
            OutboxEvent.lease_until: now + timedelta(seconds=lease_s)}
    sets.update({getattr(OutboxEvent, name): value for name, value in (set_extra or {}).items()})
    with unscoped(), bookkeeping():
        rows = list(update_chosen(OutboxEvent, OutboxEvent.id, candidates, sets)
                    .returning(*_CLAIM_FIELDS).namedtuples().execute())
    # RETURNING keeps no order: creation order, then each aggregate's versions
    rows.sort(key=lambda r: (r.created_at, r.aggregate_version, str(r.id)))
    return rows


def claim_batch(*, owner: str, limit: int, now: datetime, lease_s: float = DEFAULT_LEASE_S,
                env_id: uuid.UUID | None = None) -> list[Any]:
    """Lease the oldest due rows of the partitions `owner` holds (see module docstring)."""
    with unscoped():
        return _claim_due(owner=owner, limit=limit, now=now, lease_s=lease_s, env_id=env_id)


def _claim_due(*, owner: str, limit: int, now: datetime, lease_s: float,
               env_id: uuid.UUID | None) -> list[Any]:
    # NOTE: plain statements rather than one with a correlated NOT EXISTS: right after a burst,
    # before autovacuum has analyzed the table, the planner took the anti-join for a tiny one
    # and ran it as a nested loop over the whole backlog (20,000 rows: past the 5 s statement
    # timeout). Each statement here has one obvious index.
    where = (OutboxEvent.published_at.is_null() & OutboxEvent.parked_at.is_null()
             & (OutboxEvent.next_attempt_at <= now) & _lease_free(now))
    if env_id is not None:
        where &= OutboxEvent.env_id == env_id
    if not is_postgres() and not _any(where):
        return []  # SQLite: an idle poll takes no write lock
    with bookkeeping():
        mine = _leased_partitions(owner, now)
        if is_postgres():
            mine = mine.for_update("FOR SHARE")  # no takeover until this claim has committed
        partitions = [p for (p,) in mine.tuples()]
        if not partitions:
            return []
        candidates = (OutboxEvent.select(OutboxEvent.id)
                      .where(where & OutboxEvent.partition.in_(partitions))
                      .order_by(OutboxEvent.created_at, OutboxEvent.id).limit(limit))
        sets = {OutboxEvent.lease_owner: owner,
                OutboxEvent.lease_until: now + timedelta(seconds=lease_s)}
        rows = list(update_chosen(OutboxEvent, OutboxEvent.id, candidates, sets)
                    .returning(*_CLAIM_FIELDS).namedtuples().execute())
        if not rows:
            return []
        held = _held_back(rows, now, owner)
        for resume in set(held.values()):
            # Out of the way until its aggregate's earlier row is due again (no head-of-line
            # blocking of other aggregates). Rare: the usual batch has nothing held back.
            OutboxEvent.update(next_attempt_at=resume, lease_owner=None, lease_until=None).where(
                _id_in([i for i, r in held.items() if r == resume])).execute()
        rows = [r for r in rows if r.id not in held]
    rows.sort(key=lambda r: (r.created_at, r.aggregate_version, str(r.id)))
    return rows


def _held_back(picked: list[Any], now: datetime, owner: str) -> dict[Any, datetime]:
    """Picked rows behind an earlier pending row of their aggregate that was not picked with
    them (leased by another relay, or backing off): id -> when to look at them again."""
    keys = {(c.env_id, c.subject) for c in picked}
    earlier = (OutboxEvent.select(OutboxEvent.id, OutboxEvent.env_id, OutboxEvent.subject,
                                  OutboxEvent.aggregate_version, OutboxEvent.next_attempt_at,
                                  OutboxEvent.lease_until, OutboxEvent.lease_owner)
               .where(_in(OutboxEvent.env_id, {env for env, _ in keys}, "uuid")
                      & _in(OutboxEvent.subject, {subject for _, subject in keys}, "text")
                      & OutboxEvent.published_at.is_null() & OutboxEvent.parked_at.is_null()
                      & ~_id_in([c.id for c in picked])))
    blockers: dict[tuple[Any, str], list[Any]] = {}
    for row in earlier.namedtuples():
        if (row.env_id, row.subject) in keys:
            blockers.setdefault((row.env_id, row.subject), []).append(row)
    held: dict[Any, datetime] = {}
    for c in picked:
        before = [b for b in blockers.get((c.env_id, c.subject), ())
                  if b.aggregate_version < c.aggregate_version]
        if before:
            # Behind this relay's own batch in flight: due as soon as that batch is marked.
            # Behind another relay's lease or a backoff: due when that ends. Behind a due row
            # nobody holds (outside this batch: clocks of writers disagree): in a second.
            resume = max(now if b.lease_owner == owner
                         else max(b.next_attempt_at, b.lease_until or now,
                                  now + timedelta(seconds=1)) for b in before)
            held[c.id] = resume
    return held


def _in(column: Any, values: Iterable[Any], sql_type: str) -> Any:
    """`column IN values`: one array parameter on PostgreSQL (PERF: peewee compiling a
    500-value IN list was a quarter of the relay's CPU), a plain IN list on SQLite."""
    if is_postgres():
        return column == peewee.fn.ANY(peewee.SQL(f"%s::{sql_type}[]",
                                                  [[str(v) for v in values]]))
    return column.in_(list(values))


def _id_in(ids: Sequence[Any]) -> Any:
    return _in(OutboxEvent.id, ids, "uuid")


def claim_for_replay(ids: Sequence[uuid.UUID], *, owner: str, now: datetime,
                     lease_s: float = DEFAULT_LEASE_S) -> list[Any]:
    """Lease these rows whatever their state (published, parked, backing off) unless another
    relay is publishing them right now, and make them pending again in the same statement: a
    replay that dies midway leaves them to the running relay, never lost."""
    with unscoped():
        where = OutboxEvent.id.in_(list(ids)) & _lease_free(now)
        return _claim(where, (OutboxEvent.created_at, OutboxEvent.id), owner=owner,
                      limit=len(ids), now=now, lease_s=lease_s,
                      set_extra={"published_at": None, "parked_at": None, "attempts": 0,
                                 "next_attempt_at": now, "last_error": None})


def _any(where: Any) -> bool:
    with unscoped(), db.atomic():
        return OutboxEvent.select(OutboxEvent.id).where(where).limit(1).exists()


# -- publish -------------------------------------------------------------------------------------

@dataclass
class Outcomes:
    """What the broker said about a claimed batch, row by row."""

    published: list[Any] = field(default_factory=list)
    failures: dict[uuid.UUID, str] = field(default_factory=dict)
    untried: list[uuid.UUID] = field(default_factory=list)  # released: held back or broker down
    broker_error: str | None = None


def _waves(rows: list[Any]) -> list[list[Any]]:
    """Wave n holds the n-th row of every aggregate in the batch (in the batch's order)."""
    waves: list[list[Any]] = []
    seen: dict[tuple[Any, str], int] = {}
    for row in rows:
        key = (row.env_id, row.subject)
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
    stopped: set[tuple[Any, str]] = set()  # aggregates with a failed or unsent earlier row
    waves = _waves(rows)
    for index, wave in enumerate(waves):
        ready = [r for r in wave if (r.env_id, r.subject) not in stopped]
        out.untried.extend(r.id for r in wave if (r.env_id, r.subject) in stopped)
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
            stopped.add((row.env_id, row.subject))
            if isinstance(outcome, BrokerUnavailable):
                out.broker_error = out.broker_error or str(outcome) or "broker unavailable"
                out.untried.append(row.id)
            else:
                out.failures[row.id] = f"{type(outcome).__name__}: {outcome}"[:1000]
        if out.broker_error:
            out.untried.extend(r.id for later in waves[index + 1:] for r in later)
            break
    return out


# -- mark ----------------------------------------------------------------------------------------

def _ids_sql(ids: Sequence[Any]) -> tuple[str, list[Any]]:
    """An id-list condition: one uuid[] parameter on PostgreSQL (PERF: peewee compiling a
    500-value IN list was a quarter of the relay's CPU), an IN list on SQLite."""
    if is_postgres():
        return '"id" = ANY(%s::uuid[])', [[str(i) for i in ids]]
    return ('"id" IN (' + ", ".join("?" * len(ids)) + ")",
            [OutboxEvent.id.db_value(i) for i in ids])


def _update_ids(sets: str, params: list[Any], ids: Sequence[Any], owner: str | None) -> int:
    """`UPDATE outbox_event SET <sets> WHERE id in ids [AND lease_owner = owner]`."""
    if not ids:
        return 0
    total = 0
    mark = "%s" if is_postgres() else "?"
    for start in range(0, len(ids), 500):
        chunk = list(ids[start:start + 500])
        cond, id_params = _ids_sql(chunk)
        args = [*params, *id_params]
        sql = f'UPDATE "outbox_event" SET {sets.replace("%s", mark)} WHERE {cond}'
        if owner is not None:
            sql += f' AND "lease_owner" = {mark}'
            args.append(owner)
        total += db.execute_sql(sql, args).rowcount
    return total


def _ts(value: datetime) -> Any:
    return OutboxEvent.published_at.db_value(value)


def record_outcomes(out: Outcomes, rows: list[Any], *, owner: str, now: datetime,
                    dispatch_types: frozenset[str] = frozenset(), dispatching_now: bool = False,
                    lease_s: float = DEFAULT_LEASE_S, max_attempts: int = MAX_ATTEMPTS) -> int:
    """Mark the batch in one short transaction (only rows still leased by `owner`); returns the
    number of rows parked. Rows whose type has subscribers stay undispatched, held for
    `lease_s` when this relay runs their reactions next, else due for any relay that can."""
    by_id = {row.id: row for row in rows}
    plain = [r.id for r in out.published if r.type not in dispatch_types]
    reacting = [r.id for r in out.published if r.type in dispatch_types]
    hold = now + timedelta(seconds=lease_s) if dispatching_now else now
    done = ('"published_at" = %s, "lease_owner" = NULL, "lease_until" = NULL, '
            '"last_error" = NULL, ')
    parked = 0
    if not (out.published or out.untried or out.failures):
        return 0
    with unscoped(), bookkeeping():
        _update_ids(done + '"dispatched_at" = COALESCE("dispatched_at", %s)',
                    [_ts(now), _ts(now)], plain, owner)
        _update_ids(done + '"dispatch_next_at" = %s', [_ts(now), _ts(hold)], reacting, owner)
        _update_ids('"lease_owner" = NULL, "lease_until" = NULL', [], out.untried, owner)
        for row_id, error in out.failures.items():
            attempts = by_id[row_id].attempts + 1
            if attempts >= max_attempts:
                parked += _update_ids(
                    '"attempts" = %s, "last_error" = %s, "parked_at" = %s, '
                    '"lease_owner" = NULL, "lease_until" = NULL',
                    [attempts, error, _ts(now)], [row_id], owner)
                continue
            retry = now + timedelta(seconds=compute_backoff(attempts))
            _update_ids('"attempts" = %s, "last_error" = %s, "next_attempt_at" = %s, '
                        '"lease_owner" = NULL, "lease_until" = NULL',
                        [attempts, error, _ts(retry)], [row_id], owner)
    return parked


# -- internal subscribers (their own cursor) -----------------------------------------------------

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


def relay_stream(publisher: Publisher, claim: Callable[[], list[Any]], *, limit: int,
                 owner: str, clock: Callable[[], datetime],
                 subscribers: dict[str, list[Subscriber]] | None = None,
                 lease_s: float = DEFAULT_LEASE_S, max_attempts: int = MAX_ATTEMPTS,
                 more: Callable[[], bool] = lambda: True) -> Iterator[RelayResult]:
    """Relay batch after batch until nothing is due, `more()` says stop, or the broker
    fails. With a publisher that can send without waiting (`start_many` and `finish_many`),
    database and broker work overlap in ONE thread: while a batch's confirms are on their way,
    the batch before it is marked and the one after it claimed. Nothing is held across the
    wait but row leases; the next batch cannot take a later row of an aggregate in flight
    (held back, see _held_back), which is claimed once the batch in flight is marked."""
    start = getattr(publisher, "start_many", None)
    finish = getattr(publisher, "finish_many", None)
    pipelined = start is not None and finish is not None
    current = claim()
    upcoming: list[Any] = []
    ticket = None
    try:
        if pipelined and current:
            ticket = start([envelope(r) for r in _waves(current)[0]])
        while current:
            if pipelined and more():
                upcoming = claim()  # while `current` is in flight
            first = None if ticket is None else (lambda t=ticket: finish(t))
            out = publish_rows(publisher, current, first=first)
            done, current, ticket = current, [], None
            if upcoming and not out.broker_error:
                ticket = start([envelope(r) for r in _waves(upcoming)[0]])
                current, upcoming = upcoming, []
            yield _settled(out, done, owner=owner, now=clock(), subscribers=subscribers,
                           lease_s=lease_s, max_attempts=max_attempts)
            if out.broker_error:
                break
            if not current and more():
                # after the mark: rows held behind the marked batch are due now
                current = claim()
                if pipelined and current:
                    ticket = start([envelope(r) for r in _waves(current)[0]])
    finally:
        # Rows never sent go back at once; rows sent but not marked (an error while their
        # confirms were awaited) stay leased: they go out again when the lease expires.
        unsent = [r.id for r in upcoming] + ([r.id for r in current] if ticket is None else [])
        if unsent:
            record_outcomes(Outcomes(untried=unsent), [], owner=owner, now=clock())


def _settled(out: Outcomes, rows: list[Any], *, owner: str, now: datetime,
             subscribers: dict[str, list[Subscriber]] | None, lease_s: float,
             max_attempts: int, dispatch_types: Iterable[str] | None = None) -> RelayResult:
    """Mark a published batch and run its reactions."""
    subs = subscribers or {}
    types = frozenset(dispatch_types if dispatch_types is not None else subs)
    result = RelayResult(claimed=len(rows), broker_error=out.broker_error,
                         failures=out.failures, failed=len(out.failures),
                         published_ids=[str(r.id) for r in out.published],
                         published=len(out.published))
    result.parked = record_outcomes(out, rows, owner=owner, now=now, dispatch_types=types,
                                    dispatching_now=bool(subs), lease_s=lease_s,
                                    max_attempts=max_attempts)
    reacting = [r for r in out.published if r.type in subs]
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
    now = now or utcnow()
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


__all__ = ["BrokerUnavailable", "DEFAULT_LEASE_S", "MAX_ATTEMPTS", "MAX_BACKOFF_S",
           "Outcomes", "PartitionLease", "PublishRejected", "Publisher", "RelayResult",
           "Subscriber", "claim_batch", "claim_dispatch", "claim_for_replay", "compute_backoff",
           "dispatch_rows", "new_owner", "publish_rows", "record_outcomes", "relay_batch",
           "relay_rows"]
