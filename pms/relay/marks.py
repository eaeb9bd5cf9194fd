"""Marking a published batch: by id, and only rows still leased by the relay that sent them.

A confirmed row becomes published (its reactions, when its type has subscribers and they have not
run yet, due on their own cursor); a refused row backs off (attempts + 1) and is PARKED after `max_attempts`; a row
never sent (held back, broker down) is released untried. A relay whose lease ran out marks
nothing: another relay holds the row now.

Two ways to send the marks, same statements: `record_outcomes` in a short transaction of its
own, or, for a batch without refusals, as `Marks` that ride in front of the relay's next claim
(pms.relay.claim): one round trip and one commit for "mark the batch before, lease the
batch after" while the batch between them is in flight.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pms.db.database import db, is_postgres
from pms.db.scope import unscoped
from pms.db.statements import Statement
from pms.models.platform import OutboxEvent
from pms.relay.core import DEFAULT_LEASE_S, MAX_ATTEMPTS, bookkeeping, compute_backoff


@dataclass
class Outcomes:
    """What the broker said about a claimed batch, row by row."""

    published: list[Any] = field(default_factory=list)
    failures: dict[uuid.UUID, str] = field(default_factory=dict)
    untried: list[uuid.UUID] = field(default_factory=list)  # released: held back or broker down
    broker_error: str | None = None


_DONE = ('"published_at" = %s, "lease_owner" = NULL, "lease_until" = NULL, '
         '"last_error" = NULL, ')
# A row whose reactions already failed (before its publish: they do not wait for the bus) keeps
# them, and their error, on their own cursor; any other row without reactions to run is done.
_ON_CURSOR = '"dispatch_attempts" > 0 AND "dispatched_at" IS NULL'
_PLAIN = ('"published_at" = %s, "lease_owner" = NULL, "lease_until" = NULL, '
          f'"last_error" = CASE WHEN {_ON_CURSOR} THEN "last_error" END, '
          f'"dispatched_at" = CASE WHEN {_ON_CURSOR} THEN NULL '
          'ELSE COALESCE("dispatched_at", %s) END')
_REACTING = _DONE + '"dispatch_next_at" = %s'
_RELEASE = '"lease_owner" = NULL, "lease_until" = NULL'


@dataclass
class Marks:
    """The marks of a batch without refusals (published or released rows only)."""

    now: datetime
    hold: datetime  # the reacting rows' dispatch_next_at
    plain: list[Any] = field(default_factory=list)
    reacting: list[Any] = field(default_factory=list)
    untried: list[Any] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.plain or self.reacting or self.untried)

    def apply(self, owner: str) -> None:
        """Run them in the current transaction (SQLite, and batches marked on their own)."""
        _update_ids(_PLAIN, [_ts(self.now), _ts(self.now)], self.plain, owner)
        _update_ids(_REACTING, [_ts(self.now), _ts(self.hold)], self.reacting, owner)
        _update_ids(_RELEASE, [], self.untried, owner)

    def statements(self, owner: str) -> list[tuple[str, tuple[Any, ...]]]:
        """PostgreSQL: the same marks as (sql, params), compiled once, to send in one string."""
        out = []
        for statement, ids, values in ((_MARK_PLAIN, self.plain, {"at": self.now}),
                                       (_MARK_REACTING, self.reacting,
                                        {"at": self.now, "hold": self.hold}),
                                       (_MARK_RELEASE, self.untried, {})):
            if ids:
                compiled = statement.compiled()
                out.append((compiled.sql, compiled.params(
                    {**values, "ids": [str(i) for i in ids], "owner": owner})))
        return out


# The relay's statements run under unscoped(): the declared cross-env path that RLS lets
# through for the outbox only (app.cross_env), hence tenant_free (they name no env slot).
_MARK_PLAIN = Statement.text("relay.mark_published", tenant_free=True, postgres=(
    'UPDATE "outbox_event" SET "published_at" = %(at)s, "lease_owner" = NULL, '
    f'"lease_until" = NULL, "last_error" = CASE WHEN {_ON_CURSOR} THEN "last_error" END, '
    f'"dispatched_at" = CASE WHEN {_ON_CURSOR} THEN NULL '
    'ELSE COALESCE("dispatched_at", %(at)s) END '
    'WHERE "id" = ANY(%(ids)s::uuid[]) AND "lease_owner" = %(owner)s'))
_MARK_REACTING = Statement.text("relay.mark_published_reacting", tenant_free=True, postgres=(
    'UPDATE "outbox_event" SET "published_at" = %(at)s, "lease_owner" = NULL, '
    '"lease_until" = NULL, "last_error" = NULL, "dispatch_next_at" = %(hold)s '
    'WHERE "id" = ANY(%(ids)s::uuid[]) AND "lease_owner" = %(owner)s'))
_MARK_RELEASE = Statement.text("relay.release", tenant_free=True, postgres=(
    'UPDATE "outbox_event" SET "lease_owner" = NULL, "lease_until" = NULL '
    'WHERE "id" = ANY(%(ids)s::uuid[]) AND "lease_owner" = %(owner)s'))


def marks_for(out: Outcomes, *, now: datetime, dispatch_types: frozenset[str] = frozenset(),
              dispatching_now: bool = False, lease_s: float = DEFAULT_LEASE_S) -> Marks | None:
    """The batch's marks when it had no refusals (None: mark it with record_outcomes). Rows
    whose type has subscribers stay undispatched, held for `lease_s` when this relay runs
    their reactions next, else due for any relay that can."""
    if out.failures:
        return None
    return Marks(now=now, hold=now + timedelta(seconds=lease_s) if dispatching_now else now,
                 plain=[r.id for r in out.published if not reacts(r, dispatch_types)],
                 reacting=[r.id for r in out.published if reacts(r, dispatch_types)],
                 untried=list(out.untried))


def reacts(row: Any, types: frozenset[str] | dict[str, Any]) -> bool:
    """The row's type has reactions and they were never tried (they may have run, or failed,
    before its publish: reactions do not wait for the bus, see pms.relay.dispatch;
    tried ones stay on their own cursor)."""
    return (row.type in types and getattr(row, "dispatched_at", None) is None
            and not getattr(row, "dispatch_attempts", 0))


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
    number of rows parked."""
    if not (out.published or out.untried or out.failures):
        return 0
    by_id = {row.id: row for row in rows}
    marks = marks_for(Outcomes(published=out.published, untried=out.untried), now=now,
                      dispatch_types=dispatch_types, dispatching_now=dispatching_now,
                      lease_s=lease_s)
    parked = 0
    with unscoped(), bookkeeping():
        assert marks is not None
        marks.apply(owner)
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


__all__ = ["Marks", "Outcomes", "marks_for", "reacts", "record_outcomes"]
