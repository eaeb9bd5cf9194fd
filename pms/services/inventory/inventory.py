"""Selling and releasing rooms of a type for some nights, under row locks (SPEC rule 6).

`take_rooms` and `release_rooms` run INSIDE the caller's open unit of work and write no outbox
or audit rows: the caller's event (a reservation created, edited, cancelled) covers them. The
booking path (STYLE §G): the InventoryDay rows exist ahead for a horizon
(`pms.services.inventory.inventory_calendar`; a night beyond it gets its row here); lock them in
(room_type_id, date) order under `SET LOCAL lock_timeout`, recount physical/OOO/OOS under the
lock, then a guarded `UPDATE ... SET sold = sold + n WHERE sold + n <= capacity` whose row count
is checked.

The recounts (`night_counts` and its parts) live in `pms.queries.inventory_counts`, below both
this module and the read side (`pms.queries.inventory`), which this module uses to answer.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import date, timedelta
from typing import Any

import peewee

from pms import wiring
from pms.context import Ctx
from pms.db import locking
from pms.db.current import current_unit_of_work
from pms.db.database import db
from pms.db.dialect import fast_path
from pms.db.scope import require_env
from pms.db.statements import Statement
from pms.db.uow import unit_of_work
from pms.domain.availability import NightCount
from pms.domain.stay import date_span
from pms.errors import RoomTypeUnavailable, ValidationFailed
from pms.events import event_type
from pms.models.inventory import InventoryDay
from pms.models.property import RoomType
from pms.queries.allotments import channel_holds
from pms.queries.availability import business_date_at
from pms.queries.inventory import inventory_out
from pms.queries.inventory_counts import (  # noqa: F401 - night_counts re-exported
    maintenance_counts,
    night_counts,
    physical_counts,
)
from pms.schemas.common import to_data
from pms.schemas.inventory import InventoryOut, SellLimitIn, SellLimitOut
from pms.services.catalog.catalog import load_property
from pms.services.distribution import ari_events
from pms.services.inventory import allotments, inventory_calendar
from pms.services.inventory.block_undercut import undercut_blocks
from pms.services.inventory.night_locks import (  # noqa: F401 - ensure_days re-exported
    ensure_days,
    lock_days,
)

log = logging.getLogger("pms.inventory")

# Lock waits: every PostgreSQL write transaction starts with `SET LOCAL lock_timeout` at
# DEFAULT_LOCK_TIMEOUT_MS (pms.db.database), below the 5 s statement timeout and long enough for
# a queue of short booking transactions to drain; a longer wait answers 503 Busy (LockTimeout).

# -- locking -----------------------------------------------------------------------------------

def _check_args(nights: Sequence[date], count: int) -> list[date]:
    if count < 1:
        raise ValidationFailed("the room count must be at least 1",
                               errors=[{"field": "count", "message": "must be >= 1"}])
    ordered = sorted(set(nights))
    if not ordered:
        raise ValidationFailed("a stay has at least one night",
                               errors=[{"field": "nights", "message": "empty"}])
    return ordered


def lock_inventory(property_id: uuid.UUID,
                   keys: Iterable[tuple[uuid.UUID, Sequence[date]]]) -> None:
    """Lock the nights of several room types at once, in (room_type_id, date) order.

    Use before a release-then-take that spans two room types (a reservation edit) so two such
    edits can never deadlock; the later take/release re-lock rows this transaction already holds.
    """
    merged: dict[uuid.UUID, set[date]] = defaultdict(set)
    for room_type_id, nights in keys:
        merged[room_type_id].update(nights)
    with locking.lock_errors():
        for room_type_id in sorted(merged, key=str):
            lock_days(property_id, room_type_id, sorted(merged[room_type_id]))


def recount_locked(property_id: uuid.UUID, rows: list[InventoryDay], start: date, end: date
                   ) -> dict[tuple[uuid.UUID, date], NightCount]:
    """Counts for locked rows: their stored sold/sell limit, recounted rooms and maintenance."""
    types = {r.room_type_id for r in rows}
    physical = physical_counts(property_id, types)
    maint = maintenance_counts(property_id, types, start, end)
    out = {}
    for r in rows:
        ooo, oos = maint.get((r.room_type_id, r.date), (0, 0))
        out[(r.room_type_id, r.date)] = NightCount(
            physical=physical.get(r.room_type_id, 0), ooo=ooo, oos=oos,
            sell_limit=r.sell_limit, sold=r.sold, held=r.held)
    return out


def refresh_counts(rows: list[InventoryDay], counts: dict[tuple[uuid.UUID, date], NightCount]) -> None:
    """Write recounted physical/OOO/OOS back where the snapshot is stale (one UPDATE per
    distinct set of values, usually one for the whole stay)."""
    stale: dict[tuple[int, int, int], list[InventoryDay]] = defaultdict(list)
    for row in rows:
        fresh = counts[(row.room_type_id, row.date)]
        values = (fresh.physical, fresh.ooo, fresh.oos)
        if (row.physical, row.ooo, row.oos) != values:
            stale[values].append(row)
    for (physical, ooo, oos), group in stale.items():
        InventoryDay.update(physical=physical, ooo=ooo, oos=oos).where(
            InventoryDay.id.in_([r.id for r in group])).execute()
        for row in group:
            row.physical, row.ooo, row.oos = physical, ooo, oos


# -- the booking path --------------------------------------------------------------------------

def take_rooms(property_id: uuid.UUID, room_type_id: uuid.UUID, nights: Sequence[date],
               count: int = 1, *, first: tuple[str, list[Any]] | None = None,
               rate_plan_id: uuid.UUID | None = None) -> None:
    """Sell `count` rooms of a type for every night in `nights`, or nothing at all.

    The rooms other rate plans' allotments hold for them until their release
    (pms.domain.availability.channel_hold) are not for this sale; `rate_plan_id`, the sale's
    plan, may sell its own (its allotment's cap is `allotments.check`'s).

    Call inside the caller's open unit of work; no outbox or audit rows are written here.
    `first`: a compiled statement of the caller's to run before, in the same round trip on
    the PostgreSQL path (the booking's reservation INSERT; PERF); its errors
    (IntegrityError) reach the caller as they are.

    Raises:
        ValidationFailed: count < 1 or no nights.
        RoomTypeUnavailable: some night has fewer than `count` sellable rooms (409
            room_type_unavailable; `nights` in the problem body lists them).
        LockTimeout: the nights are locked by others for longer than the transaction's
            lock_timeout (503).
    """
    _take(property_id, room_type_id, _check_args(nights, count), count, first, rate_plan_id)


@dataclasses.dataclass
class _HoldHooks:
    """TEST-ONLY (tests/concurrency/test_allotment_hold_race.py): the control that counts the
    other plans' holds BEFORE the night locks (on the reference path), so a sale can take a
    room that a concurrent cancel gives back to a channel's hold."""

    holds_before_lock: bool = False


HOLD_HOOKS = _HoldHooks()


def _now() -> Any:
    uow = current_unit_of_work()
    return uow.ctx.now if uow is not None else None


def _take_pg(property_id: uuid.UUID, room_type_id: uuid.UUID, ordered: list[date], count: int,
             first: tuple[str, list[Any]] | None, plan: uuid.UUID | None = None) -> None:
    """`_take` by `pms_take_nights`, in one round trip with `first` (PostgreSQL); the
    reference path when locking is off (the TEST-ONLY control runs) or beyond the function."""
    wired = wiring.current()
    if wired.locking_enabled and not HOLD_HOOKS.holds_before_lock:
        sold = _take_in_one(property_id, room_type_id, ordered, count, wired.pause_after_check,
                            first, plan)
        first = None  # sent (its effect stays even when the slow path follows)
        if sold:
            return
    _take.reference(property_id, room_type_id, ordered, count, first,  # type: ignore[attr-defined]
                    plan)


@fast_path(_take_pg)
def _take(property_id: uuid.UUID, room_type_id: uuid.UUID, ordered: list[date], count: int,
          first: tuple[str, list[Any]] | None, plan: uuid.UUID | None = None) -> None:
    """The take of checked nights (see take_rooms): `first` sent, then `_take_by_models`."""
    if first is not None:
        db.execute_sql(first[0], first[1])
    _take_by_models(property_id, room_type_id, ordered, count, plan)


def other_holds(property_id: uuid.UUID, room_type_id: uuid.UUID, start: date, count: int,
                plan: uuid.UUID | None, now: Any = None) -> list[int]:
    """The rooms every rate plan but `plan` holds per night (allotments with a release period,
    judged against the business date at `now`): what a sale on `plan` may not take."""
    total = [0] * count
    for (held_plan, _rt), per in channel_holds(property_id, start, count,
                                               business_date_at(property_id, now),
                                               room_type_id=room_type_id).items():
        if held_plan != plan:
            total = [a + b for a, b in zip(total, per, strict=True)]
    return total


def _take_by_models(property_id: uuid.UUID, room_type_id: uuid.UUID, ordered: list[date],
                    count: int, plan: uuid.UUID | None = None) -> None:
    """The take's reference path (SQLite's, and PostgreSQL's beyond the fast path): lock the
    nights, recount them, refuse a short night, sell (guarded). `pms_take_nights` is proven
    equal to it (tests/services/test_rule_equivalence.py)."""
    end = ordered[-1] + timedelta(days=1)
    wired = wiring.current()
    early = None
    if HOLD_HOOKS.holds_before_lock:  # TEST-ONLY control: the holds counted before the locks
        early = other_holds(property_id, room_type_id, ordered[0], (end - ordered[0]).days,
                            plan, _now())
    with locking.lock_errors():
        rows = lock_days(property_id, room_type_id, ordered)
        counts = recount_locked(property_id, rows, ordered[0], end)
        holds = early if early is not None else other_holds(
            property_id, room_type_id, ordered[0], (end - ordered[0]).days, plan, _now())
        if any(holds):  # the ARI event names what each plan may sell (as `_take_in_one`)
            ari_events.touch(property_id, room_type_id, ordered, allotments=True)
        short = [r.date for r in rows
                 if counts[(room_type_id, r.date)].sellable_beside(
                     holds[(r.date - ordered[0]).days]) < count]
        if wired.pause_after_check is not None:  # TEST-ONLY: widen the race window
            wired.pause_after_check()
        if short:
            raise RoomTypeUnavailable(
                f"no room of this type is available on {', '.join(d.isoformat() for d in short)}",
                nights=[d.isoformat() for d in short])
        refresh_counts(rows, counts)
        if wired.locking_enabled:
            _guarded_increment(rows, count)
        else:
            # TEST-ONLY control path (pms.wiring): read-check-then-write, no guard.
            for row in rows:
                InventoryDay.update(sold=row.sold + count).where(InventoryDay.id == row.id).execute()


# Lock, recount and sell the nights in ONE statement (PERF, it replaced lock / count
# rooms / count maintenance / refresh / update, five round trips). The nights are locked in date
# order (LockRows above the sort), rooms and maintenance are recounted under those locks as
# `recount_locked` does (a room out of order and out of service on a night counts once, as out
# of order), and `sold` goes up only when EVERY night has `count` sellable rooms; the same UPDATE
# writes the recounted physical/OOO/OOS snapshot. Room types keep calendar rows for a horizon
# ahead (pms.services.inventory.inventory_calendar), so a booking usually finds every row. The fallback, for
# a night beyond the horizon: a missing row makes the verdict false (fewer rows than nights),
# nothing is sold, and the rows are created and the take run again, in one more round trip.
#
# The statement is the body of the PL/pgSQL function `pms_take_nights` (migration 012): called,
# its plan is made once per server connection and kept by the server (PERF: parsing and planning
# the CTE cost more than running it), with no session state a pooler could lose. Its rows:
# (date, sellable, nights taken: all of them or 0), in date order.
_TAKE_SQL = ("SELECT out_date, out_sellable, out_taken, out_holds FROM pms_take_nights("
             "%(env)s, %(property)s, %(room_type)s, %(nights)s::date[], %(count)s, "
             "%(plan)s::uuid, %(now)s::timestamptz)")
_TAKE = Statement.text("inventory.take_nights", postgres=_TAKE_SQL)
# A night beyond the calendar horizon has no row yet: create the missing rows and take, in one
# round trip (the INSERT, then the take; psycopg2 returns the last statement's rows). A twin
# inserting the same night waits on ours (ON CONFLICT), then finds the row and queues for it.
_CREATE_AND_TAKE = Statement.text("inventory.create_and_take_nights", postgres="""
INSERT INTO inventory_day (id, created_at, updated_at, env_id, property_id, room_type_id, date,
                           physical, ooo, oos, sold)
SELECT gen_random_uuid(), now(), now(), %(env)s, %(property)s, %(room_type)s, n, 0, 0, 0, 0
FROM unnest(%(nights)s::date[]) AS n
ON CONFLICT (env_id, room_type_id, date) DO NOTHING;
""" + _TAKE_SQL)


def _take_in_one(property_id: uuid.UUID, room_type_id: uuid.UUID, ordered: list[date],
                 count: int, pause: Callable[[], None] | None,
                 first: tuple[str, list[Any]] | None = None,
                 plan: uuid.UUID | None = None) -> bool:
    """The PostgreSQL booking path: True when sold, RoomTypeUnavailable when a night is short,
    False when a calendar row is still missing (nothing was sold; take the slow path)."""
    if not db.in_transaction():  # outside one, the locks would end with the statement
        raise RuntimeError("inventory locks need a transaction (use unit_of_work)")
    values = {"room_type": room_type_id, "property": property_id, "nights": ordered,
              "n": len(ordered), "count": count, "plan": plan, "now": _now()}
    with locking.lock_errors():
        if first is None:
            rows = _TAKE.rows(**values)
        else:  # the caller's statement, then the take: one round trip
            compiled = _TAKE.compiled()
            params = compiled.params({**values, "env": require_env()})
            rows = db.execute_sql(f"{first[0]}; {compiled.sql}",
                                  [*first[1], *params]).fetchall()
        if len(rows) < len(ordered):  # a night beyond the horizon: make its row, then take
            rows = _CREATE_AND_TAKE.rows(**values)
    if pause is not None:  # TEST-ONLY: hold the locks a while, as the slow path does
        pause()
    if len(rows) < len(ordered):
        return False
    if rows[0][2] == len(ordered):
        if any(holds for *_, holds in rows):
            # other plans hold rooms of these nights: the event reads the nights back with
            # what each plan may sell (pms.services.distribution.ari_events)
            ari_events.touch(property_id, room_type_id, ordered, allotments=True)
            return True
        # (as `lock_days`), with the nights' counts: sellable before the take, less
        # the rooms taken (the nights stay locked to the COMMIT)
        ari_events.touch(property_id, room_type_id, ordered,
                         sellable={day: before - count for day, before, _, _h in rows})
        return True
    short = [day for day, sellable, *_ in rows if sellable < count]
    raise RoomTypeUnavailable(
        f"no room of this type is available on {', '.join(d.isoformat() for d in short)}",
        nights=[d.isoformat() for d in short])


def _guarded_increment(rows: list[InventoryDay], count: int) -> None:
    day = InventoryDay
    updated = (day.update(sold=day.sold + count)
               .where(day.id.in_([r.id for r in rows])
                      & (day.sold + day.held + count <= day.physical - day.ooo - day.oos)
                      & (day.sell_limit.is_null()
                         | (day.sold + day.held + count <= day.sell_limit)))
               .execute())
    if updated != len(rows):
        # Only reachable if the lock did not hold (a bug): refuse rather than oversell. The
        # exception aborts the caller's transaction, so the partial update is rolled back.
        log.error("guarded inventory update touched %s of %s nights", updated, len(rows))
        raise RoomTypeUnavailable("no room of this type is available for every night",
                                  nights=[r.date.isoformat() for r in rows])


def release_rooms(property_id: uuid.UUID, room_type_id: uuid.UUID, nights: Sequence[date],
                  count: int = 1, *, reservation: Any = None) -> None:
    """Give back `count` rooms of a type for `nights` (a cancel, or the old nights of an edit).

    Call inside the caller's open unit of work. `sold` never goes below zero. `reservation`:
    the reservation that gives the nights back: its rate plan's allotment's rooms left grow, and
    the ARI event says so (pms.services.inventory.allotments).

    Raises:
        ValidationFailed: count < 1 or no nights. LockTimeout: busy (503).
    """
    ordered = _check_args(nights, count)
    with locking.lock_errors():
        rows = lock_days(property_id, room_type_id, ordered)
        short = [r.date.isoformat() for r in rows if r.sold < count]
        if short:
            log.warning("releasing more rooms than sold on %s (room type %s)", short, room_type_id)
        day = InventoryDay
        (day.update(sold=peewee.Case(None, [(day.sold >= count, day.sold - count)], 0))
         .where(day.id.in_([r.id for r in rows])).execute())
    if reservation is not None:
        allotments.released(property_id, room_type_id, reservation, ordered)


# -- sell limits (a use case of its own: one unit of work, one event) ---------------------------

def set_sell_limits(ctx: Ctx, property_id: uuid.UUID, body: SellLimitIn) -> SellLimitOut:
    """Set (or clear, with None) a room type's sell limit for from_date..to_date.

    The limit may be set below what is already sold (existing reservations stay; nothing more
    is sold); it never raises availability above physical - OOO - OOS. A limit that leaves a
    night with more rooms sold and held by blocks than it allows is kept too; the answer's
    `affected_blocks` names the blocks holding rooms on those nights.

    Raises:
        NotFound: no such property.
        ValidationFailed: bad range (over 366 days), a room type of another property.
        LockTimeout: the nights are busy (503).
    """
    days = date_span(body.from_date, body.to_date, weekdays=body.weekdays, max_days=366)
    with unit_of_work(ctx) as uow:
        load_property(property_id)
        room_type = RoomType.get_or_none((RoomType.id == body.room_type_id)
                                         & (RoomType.property == property_id))
        if room_type is None:
            raise ValidationFailed("room_type_id is not a room type of this property",
                                   errors=[{"field": "room_type_id", "message": "unknown room type"}])
        end = body.to_date + timedelta(days=1)
        with locking.lock_errors():
            rows = lock_days(property_id, room_type.id, days, capacity=True)
            InventoryDay.update(sell_limit=body.sell_limit).where(
                InventoryDay.id.in_([r.id for r in rows])).execute()
            counts = recount_locked(property_id, rows, body.from_date, end)
            refresh_counts(rows, counts)
            affected = undercut_blocks(property_id, {
                k: dataclasses.replace(c, sell_limit=body.sell_limit) for k, c in counts.items()})
        out = SellLimitOut(**{f: getattr(inventory_out(property_id, [room_type.id],
                                                       body.from_date, end), f)
                              for f in InventoryOut.__struct_fields__},
                           affected_blocks=affected)
        if body.weekdays:
            out.data = [d for d in out.data if d.date in set(days)]
        data = {"room_type_id": str(room_type.id), "from_date": body.from_date.isoformat(),
                "to_date": body.to_date.isoformat(), "sell_limit": body.sell_limit,
                "days": to_data(out.data)}
        uow.audit("inventory.updated", room_type, after=data)
        uow.emit(event_type("inventory", "updated"), room_type, data, property_id=property_id)
    return out


def ensure_inventory(ctx: Ctx, property_id: uuid.UUID, room_type_id: uuid.UUID, start: date,
                     end: date) -> None:
    """Materialize the InventoryDay rows of [start, end) in a short transaction of their own,
    in one set-based statement (`pms.services.inventory.inventory_calendar.fill`).

    Not a domain change (zero rows sold, nothing an API reader can tell apart), so no event and
    no audit row. Room types get their calendar for the horizon when they are created; this
    makes rows for any other range (demo seed, benchmarks, the concurrency control tests: with
    rows that do not exist yet, PostgreSQL's INSERT ... ON CONFLICT makes concurrent first
    bookings wait on each other, which would hide the race the control must show).
    """
    from pms.db.database import write_begin_args
    from pms.db.scope import tenant_scope

    with tenant_scope(ctx.env_id), db.atomic(**write_begin_args()):
        inventory_calendar.fill(property_id, start, (end - start).days,
                                room_type_id=room_type_id)
