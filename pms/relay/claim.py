"""Claiming outbox rows by lease: the oldest due rows of the partitions a relay holds, leased
to it in one short committed transaction (`lease_owner`, `lease_until`); an expired lease makes
a row due again.

A stream is what one `aggregateversion` counter numbers: (env_id, aggregate_type, subject),
`stream_key`. A room type's own events, its `inventory:updated` and its ARI events share a
subject and are three streams; the claim, the waves, the held-back check, parking and the
replay's release all go by the stream, never by the subject alone, so one family never waits
for another.

A row is not leased while an earlier row of its stream is unpublished outside the batch (leased
by another relay, backing off, PARKED, or in this relay's own batch in flight): it is "held
back", its `next_attempt_at` pushed to when that earlier row can be done, so it blocks no other
stream. A parked row holds its stream's later rows until an operator replays it (several
events carry deltas, see docs/operations/relay.md); the replay makes them due at
once (`release_behind`).

PostgreSQL runs the whole claim as ONE statement compiled once per process: the partitions this
relay holds (FOR SHARE: no takeover until the claim commits), the due rows (FOR UPDATE SKIP
LOCKED, on the partial index of pending rows), the held-back check and the lease, sent in one
round trip with the marks of the relay's previous batch in front of it (pms.relay.marks)
and committed as one implicit transaction. SQLite runs the same steps with peewee under BEGIN
IMMEDIATE, which excludes every other writer.
"""

from __future__ import annotations

import uuid
from collections import namedtuple
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

import peewee

from pms.db.database import db, is_postgres
from pms.db.scope import unscoped
from pms.db.statements import Statement
from pms.models.platform import OutboxEvent
from pms.models.relay import RelayPartition
from pms.relay.core import DEFAULT_LEASE_S, bookkeeping, update_chosen
from pms.relay.marks import Marks

# A row behind a parked row of its stream is looked at again this long after (a replay of
# the parked row makes it due at once, see release_behind).
BEHIND_PARKED_S = 60.0

# What the envelope and the bookkeeping need (rows come back as named tuples: no model
# instances on the relay's hot path).
_CLAIM_FIELDS = (OutboxEvent.id, OutboxEvent.env_id, OutboxEvent.type, OutboxEvent.source,
                 OutboxEvent.subject, OutboxEvent.property_id, OutboxEvent.idempotency_key,
                 OutboxEvent.time, OutboxEvent.traceparent, OutboxEvent.aggregate_version,
                 OutboxEvent.attempts, OutboxEvent.dispatch_attempts, OutboxEvent.created_at,
                 OutboxEvent.data, OutboxEvent.dispatched_at, OutboxEvent.aggregate_type)


def stream_key(row: Any) -> tuple[Any, str, str]:
    """The stream a row belongs to: what its `aggregate_version` counts."""
    return (row.env_id, row.aggregate_type, row.subject)


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
    return in_version_order(rows)


def in_version_order(rows: list[Any]) -> list[Any]:
    """A batch in publishing order (RETURNING keeps none): each stream's rows by
    `aggregate_version`, whatever their `created_at` says (it comes from the clock of the host
    that wrote the row, and two hosts' clocks disagree); across streams, by `created_at`.
    Each stream's rows take the places its rows hold in the creation order, in version
    order (so its n-th version goes in the n-th wave, see pms.relay.sweep)."""
    rows = sorted(rows, key=lambda r: (r.created_at, str(r.id)))
    places: dict[tuple[Any, str, str], list[int]] = {}
    for index, row in enumerate(rows):
        places.setdefault(stream_key(row), []).append(index)
    out = list(rows)
    for indexes in places.values():
        if len(indexes) > 1:
            mine = sorted((rows[i] for i in indexes), key=lambda r: r.aggregate_version)
            for index, row in zip(indexes, mine, strict=True):
                out[index] = row
    return out


def claim_batch(*, owner: str, limit: int, now: datetime, lease_s: float = DEFAULT_LEASE_S,
                env_id: uuid.UUID | None = None, marks: Marks | None = None) -> list[Any]:
    """Lease the oldest due rows of the partitions `owner` holds (see module docstring), after
    applying `marks` (the relay's previous batch) in the same transaction."""
    with unscoped():
        if is_postgres():
            return _claim_due_pg(owner=owner, limit=limit, now=now, lease_s=lease_s,
                                 env_id=env_id, marks=marks)
        if marks:
            with bookkeeping():
                marks.apply(owner)
        return _claim_due(owner=owner, limit=limit, now=now, lease_s=lease_s, env_id=env_id)


# RETURNING order of the PostgreSQL claim; the same names as the peewee path's named tuples.
_FIELD_NAMES = tuple(f.name for f in _CLAIM_FIELDS)
ClaimedRow = namedtuple("ClaimedRow", _FIELD_NAMES)  # type: ignore[misc]  # noqa: PYI024

_CLAIM_SQL = """
WITH "mine" AS MATERIALIZED (
    SELECT "partition" FROM "relay_partition"
    WHERE "owner" = %(owner)s AND "expires_at" > %(now)s
    FOR SHARE),
"picked" AS MATERIALIZED (
    SELECT "id", "env_id", "subject", "aggregate_type", "aggregate_version" FROM "outbox_event"
    WHERE "published_at" IS NULL AND "parked_at" IS NULL AND "next_attempt_at" <= %(now)s
      AND ("lease_until" IS NULL OR "lease_until" <= %(now)s)
      AND "partition" = ANY (ARRAY(SELECT "partition" FROM "mine")){env}
    ORDER BY "created_at", "id" LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED),
"held" AS MATERIALIZED (
    SELECT p."id", x."resume" FROM "picked" p CROSS JOIN LATERAL (
        SELECT MAX(CASE WHEN b."parked_at" IS NOT NULL THEN %(behind_parked)s
                        WHEN b."lease_owner" = %(owner)s THEN %(now)s
                        ELSE GREATEST(b."next_attempt_at", COALESCE(b."lease_until", %(now)s),
                                      %(in_a_second)s) END) AS "resume"
        FROM "outbox_event" b
        WHERE b."env_id" = p."env_id" AND b."subject" = p."subject"
          AND b."aggregate_type" = p."aggregate_type"
          AND b."aggregate_version" < p."aggregate_version"
          AND COALESCE(b."published_at", 'infinity') = 'infinity'
          AND b."id" <> ALL (ARRAY(SELECT "id" FROM "picked"))) x
    WHERE x."resume" IS NOT NULL)
UPDATE "outbox_event" o SET
    "lease_owner" = CASE WHEN h."resume" IS NULL THEN %(owner)s END,
    "lease_until" = CASE WHEN h."resume" IS NULL THEN %(until)s END,
    "next_attempt_at" = COALESCE(h."resume", o."next_attempt_at")
FROM "picked" p LEFT JOIN "held" h ON h."id" = p."id"
WHERE o."id" = p."id"
RETURNING h."resume" IS NOT NULL, """ + ", ".join(f'o."{name}"' for name in _FIELD_NAMES)

# NOTE: one statement. `picked` is materialized and LIMITed, and `held` probes, once per picked
# row (LATERAL, correlated on the index's key), the pending streams' index (env_id, subject,
# aggregate_type, aggregate_version over the unpublished rows, migration 053): what it reads is
# the picked row's own stream's backlog, never its history nor the env's backlog. The blockers
# are the unpublished rows, parked ones included (a parked row blocks the later rows of its
# stream). "Unpublished" is spelled `COALESCE(published_at, 'infinity') = 'infinity'`, the
# predicate of that index and of no other: the partial index of unpublished rows by
# (env_id, created_at) (the env-scoped claim's) cannot serve the probe, so no plan walks the
# env's whole backlog once per picked row (it once did, 2 s per claim, and a planner on stale
# statistics chose it again). Why this shape (tests/workers/test_relay_claim_history.py):
# - A join of `picked` with the table, planned on statistics taken while nothing was pending (the
#   usual state of an outbox), estimated one picked row and scanned the whole index once per
#   picked row without an index condition: on the full (env_id, subject, aggregate_version)
#   index that is every version ever written, and an ARI stream gets one per booking of its room
#   type (100,000 published rows, half on four ARI streams: past the 5 s statement timeout;
#   under `make bench` the load's ARI events waited 11 s at p95).
_CLAIM_ANY_ENV = Statement.text("relay.claim", tenant_free=True,
                                postgres=_CLAIM_SQL.format(env=""))
_CLAIM_ONE_ENV = Statement.text("relay.claim_env", tenant_free=True,
                                postgres=_CLAIM_SQL.format(env=' AND "env_id" = %(env_id)s'))
# the marks and the claim commit without waiting for the WAL flush (see bookkeeping())
_NO_WAIT = "SELECT set_config('synchronous_commit', 'off', true)"


def _claim_due_pg(*, owner: str, limit: int, now: datetime, lease_s: float,
                  env_id: uuid.UUID | None, marks: Marks | None) -> list[Any]:
    statement = _CLAIM_ANY_ENV if env_id is None else _CLAIM_ONE_ENV
    compiled = statement.compiled()
    values = {"owner": owner, "now": now, "limit": limit, "env_id": env_id,
              "until": now + timedelta(seconds=lease_s),
              "in_a_second": now + timedelta(seconds=1),
              "behind_parked": now + timedelta(seconds=BEHIND_PARKED_S)}
    sqls = [_NO_WAIT]
    params: list[Any] = []
    for sql, args in (marks.statements(owner) if marks else ()):
        sqls.append(sql)
        params.extend(args)
    sqls.append(compiled.sql)
    params.extend(compiled.params(values))
    # Outside any transaction: the statements go out as one string, which PostgreSQL runs as
    # one implicit transaction (committed when the last one ends); the cursor holds the last
    # statement's rows. The connection's settings (tenant switch, timeouts) are prefixed by
    # pms.db.database as for every statement.
    if db.in_transaction():
        raise RuntimeError("the relay's claim commits on its own: call it outside a transaction")
    rows = db.execute_sql("; ".join(sqls), tuple(params)).fetchall()
    out = [ClaimedRow(_uuid(r[1]), _uuid(r[2]), *r[3:6], None if r[6] is None else _uuid(r[6]),
                      *r[7:]) for r in rows if not r[0]]
    return in_version_order(out)


def _claim_due(*, owner: str, limit: int, now: datetime, lease_s: float,
               env_id: uuid.UUID | None) -> list[Any]:
    """SQLite (BEGIN IMMEDIATE excludes other writers): the claim in peewee statements."""
    where = (OutboxEvent.published_at.is_null() & OutboxEvent.parked_at.is_null()
             & (OutboxEvent.next_attempt_at <= now) & _lease_free(now))
    if env_id is not None:
        where &= OutboxEvent.env_id == env_id
    if not _any(where):
        return []  # an idle poll takes no write lock
    with bookkeeping():
        partitions = [p for (p,) in _leased_partitions(owner, now).tuples()]
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
    return in_version_order(rows)


def _uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(value)


def _held_back(picked: list[Any], now: datetime, owner: str) -> dict[Any, datetime]:
    """Picked rows behind an earlier pending row of their stream that was not picked with
    them (leased by another relay, or backing off): id -> when to look at them again."""
    keys = {stream_key(c) for c in picked}
    earlier = (OutboxEvent.select(OutboxEvent.id, OutboxEvent.env_id, OutboxEvent.subject,
                                  OutboxEvent.aggregate_type,
                                  OutboxEvent.aggregate_version, OutboxEvent.next_attempt_at,
                                  OutboxEvent.lease_until, OutboxEvent.lease_owner,
                                  OutboxEvent.parked_at)
               .where(_in(OutboxEvent.env_id, {env for env, _, _ in keys}, "uuid")
                      & _in(OutboxEvent.subject, {subject for _, _, subject in keys}, "text")
                      & OutboxEvent.published_at.is_null()  # parked rows block too
                      & ~_id_in([c.id for c in picked])))
    blockers: dict[tuple[Any, str, str], list[Any]] = {}
    for row in earlier.namedtuples():
        if stream_key(row) in keys:
            blockers.setdefault(stream_key(row), []).append(row)
    held: dict[Any, datetime] = {}
    for c in picked:
        before = [b for b in blockers.get(stream_key(c), ())
                  if b.aggregate_version < c.aggregate_version]
        if before:
            # Behind a parked row: looked at again every BEHIND_PARKED_S until it is replayed
            # (a replay makes them due at once). Behind this relay's own batch in flight: due
            # as soon as that batch is marked. Behind another relay's lease or a backoff: due
            # when that ends. Behind a due row nobody holds (outside this batch): in a second.
            resume = max(now + timedelta(seconds=BEHIND_PARKED_S) if b.parked_at is not None
                         else now if b.lease_owner == owner
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
        rows = _claim(where, (OutboxEvent.created_at, OutboxEvent.id), owner=owner,
                      limit=len(ids), now=now, lease_s=lease_s,
                      set_extra={"published_at": None, "parked_at": None, "attempts": 0,
                                 "next_attempt_at": now, "last_error": None})
        release_behind(rows, now=now)
        return rows


def release_behind(rows: Sequence[Any], *, now: datetime) -> int:
    """The later rows of these rows' streams, held back (behind a parked row), due now: a
    replayed row is pending again, and the claim holds them only while it is."""
    streams = {stream_key(r) for r in rows}
    if not streams:
        return 0
    count = 0
    with unscoped(), bookkeeping():
        for env_id, aggregate_type in {(env, kind) for env, kind, _ in streams}:
            subjects = {subject for env, kind, subject in streams
                        if (env, kind) == (env_id, aggregate_type)}
            count += OutboxEvent.update(next_attempt_at=now).where(
                (OutboxEvent.env_id == env_id) & (OutboxEvent.aggregate_type == aggregate_type)
                & _in(OutboxEvent.subject, subjects, "text")
                & OutboxEvent.published_at.is_null() & OutboxEvent.parked_at.is_null()
                & OutboxEvent.lease_owner.is_null() & (OutboxEvent.attempts == 0)
                & (OutboxEvent.next_attempt_at > now)).execute()
    return count


def _any(where: Any) -> bool:
    with unscoped(), db.atomic():
        return OutboxEvent.select(OutboxEvent.id).where(where).limit(1).exists()


__all__ = ["BEHIND_PARKED_S", "ClaimedRow", "claim_batch", "claim_for_replay", "in_version_order",
           "release_behind", "stream_key"]
