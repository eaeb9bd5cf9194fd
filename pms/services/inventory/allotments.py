"""Allotments per rate plan: at most N rooms of a type sold on one rate plan per
night, as channel managers know them, distinct from the room type's sell limit.

Stored per (rate plan, room type, night) in `rate_plan_allotment` (`set_allotments`, one unit
of work, one event, one audit row; `list_allotments`). What a plan has sold is counted, not
stored (`pms.queries.allotments`): its live reservations of the type that spend the night, so a
cancel, a no-show or an early check-out gives the allotment back with no bookkeeping of its own.

The rule holds under the booking's night locks: `check` runs AFTER the booking's take has locked
the nights of the room type (`pms.services.inventory.inventory.take_rooms`; an edit's
`lock_inventory`), so two bookings of the same plan and nights count one after the other and
can never sell past the allotment (proved with parallel requests on PostgreSQL against a control
that counts before the locks: tests/concurrency/test_allotment_race.py). `set_allotments` takes
the same night locks, so a count never straddles a write; a booking that skipped the count on a
plan it read without allotments (before its locks) sends a guard with its COMMIT (`_guard`).

Every change of a plan's rooms left (a write here, a booking, an edit, a cancel, a no-show, an
early check-out of a plan with an allotment on those nights) touches the room type's ARI event
with `allotments=True` (pms.services.distribution.ari_events): its nights then carry the night's
allotments (`allotments: {rate_plan_id: rooms left}`).

An allotment with a release period (`release_days`) also holds its plan's unsold rooms from
every other sale until N days before the night (`pms.domain.availability.channel_hold`): the
booking's take counts the holds under its night locks (`pms_take_nights`), and the night
audit's date roll touches the ARI events of the nights it releases (`touch_released`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from pms.context import Ctx
from pms.db import locking
from pms.db.current import current_unit_of_work
from pms.db.dialect import dialect_variant
from pms.db.uow import read_scope, unit_of_work
from pms.domain.availability import allotment_left, channel_hold
from pms.domain.business_date import business_date
from pms.domain.stay import date_span
from pms.errors import AllotmentExhausted, NotFound, ValidationFailed
from pms.models.catalog import RatePlan
from pms.models.property import RoomType
from pms.models.rates import RatePlanAllotment
from pms.queries.allotments import ALLOTMENT_GUARD, allotment_counts, has_allotments
from pms.schemas import inventory as s
from pms.schemas.common import to_data
from pms.services.catalog.catalog import load_property
from pms.services.distribution import ari_events
from pms.services.inventory.night_locks import lock_days

MAX_DAYS = 366


@dataclass
class _TestHooks:
    """TEST-ONLY (tests/services/test_allotments.py): a pause after the allotment was counted
    (the locks still held), and the control order that counts BEFORE the booking's night locks,
    which lets two parallel bookings both see the last room of the allotment."""

    pause_after_check: Any = None
    check_before_lock: bool = False
    # an allotment write paused after its rows are written (its night locks held); the control
    # that writes without the nights' locks (a cancel's count then misses the new allotment)
    pause_after_write: Any = None
    write_without_lock: bool = False
    # a booking paused after it read its rate plan, before its night locks; the control that
    # sends no guard with a booking that skipped the count
    pause_before_lock: Any = None
    no_guard: bool = False


TEST_HOOKS = _TestHooks()


def _span(nights: Sequence[date]) -> tuple[date, int]:
    first = min(nights)
    return first, (max(nights) - first).days + 1


def check(property_id: uuid.UUID, room_type_id: uuid.UUID, rate_plan_id: uuid.UUID,
          nights: Sequence[date], reservation_id: uuid.UUID | None, *,
          plan_version: int | None = None) -> None:
    """Refuse a booking of one room on the plan for `nights` when some night's allotment has
    none left besides it (call with the nights locked, inside the booking's unit of work;
    `reservation_id`: the booking's own row, not counted; `plan_version`: the plan's version
    as the booking read it, to skip the count at once for a plan without allotments,
    `has_allotments`). Touches the ARI event of the nights that have an allotment.

    Raises: AllotmentExhausted (409, `nights`)."""
    if plan_version is not None and not has_allotments(property_id, rate_plan_id=rate_plan_id,
                                                       version=plan_version):
        _guard(rate_plan_id, room_type_id, nights)
        if TEST_HOOKS.pause_after_check is not None:  # TEST-ONLY (as below)
            TEST_HOOKS.pause_after_check()
        return
    first, counts, capped = _capped_nights(property_id, room_type_id, rate_plan_id, nights,
                                           reservation_id)
    short = [first + timedelta(days=o) for o in capped
             if (allotment_left(*counts[o][:2]) or 0) < 1]
    if TEST_HOOKS.pause_after_check is not None:  # TEST-ONLY: widen the race window
        TEST_HOOKS.pause_after_check()
    if short:
        raise AllotmentExhausted(
            "the rate plan's allotment is used up on "
            + ", ".join(d.isoformat() for d in short),
            nights=[d.isoformat() for d in short])
    _touch_one_more(property_id, room_type_id, rate_plan_id, first, counts, capped)


def _capped_nights(property_id: uuid.UUID, room_type_id: uuid.UUID, rate_plan_id: uuid.UUID,
                   nights: Sequence[date], reservation_id: uuid.UUID | None
                   ) -> tuple[date, dict[int, Any], list[int]]:
    """The first night, the plan's counts per night offset without `reservation_id`, and the
    offsets of `nights` that have an allotment."""
    first, count = _span(nights)
    counts = allotment_counts(property_id, first, count, rate_plan_id=rate_plan_id,
                              room_type_id=room_type_id,
                              exclude=reservation_id).get((rate_plan_id, room_type_id), {})
    wanted = {(d - first).days for d in nights}
    return first, counts, sorted(o for o in counts if o in wanted)


def _touch_one_more(property_id: uuid.UUID, room_type_id: uuid.UUID, rate_plan_id: uuid.UUID,
                    first: date, counts: dict[int, Any], capped: list[int]) -> None:
    """Touch the ARI event of the capped nights with what they have left once the sale being
    made commits (one more sold)."""
    if capped:
        ari_events.touch(property_id, room_type_id,
                         [first + timedelta(days=o) for o in capped],
                         allotments={first + timedelta(days=o): {
                             rate_plan_id: allotment_left(counts[o][0], counts[o][1] + 1) or 0}
                             for o in capped})


def counted(property_id: uuid.UUID, room_type_id: uuid.UUID, rate_plan_id: uuid.UUID,
            nights: Sequence[date], reservation_id: uuid.UUID, *,
            plan_version: int | None = None) -> None:
    """A sale on the plan that its allotment does not refuse still counts against it: a
    block's pick-up (the group's contracted room, never refused by a channel's allotment) is a
    reservation on the plan, so the nights that have an allotment have one room fewer left
    once it commits. Touch their ARI event with that (call with the nights locked;
    `plan_version` as in `check`: a plan without allotments reads nothing)."""
    if not nights or (plan_version is not None and not has_allotments(
            property_id, rate_plan_id=rate_plan_id, version=plan_version)):
        return
    _touch_one_more(property_id, room_type_id, rate_plan_id,
                    *_capped_nights(property_id, room_type_id, rate_plan_id, nights,
                                    reservation_id))


def _guard(rate_plan_id: uuid.UUID, room_type_id: uuid.UUID, nights: Sequence[date]) -> None:
    """The plan was read without allotments at the version the booking read BEFORE its night
    locks, and an allotment write commits under those same locks: queue the guard that fails
    the COMMIT (503 retry) if one was set on these nights meanwhile (migration 046; SQLite:
    nothing, its write transaction is serialized whole). No round trip of its own."""
    uow = current_unit_of_work()
    if uow is None or TEST_HOOKS.no_guard:
        return
    _queue_guard(uow, rate_plan_id, room_type_id, nights)


def _guard_queued(uow: Any, rate_plan_id: uuid.UUID, room_type_id: uuid.UUID,
                  nights: Sequence[date]) -> None:
    uow.queue(ALLOTMENT_GUARD, {"plan": rate_plan_id, "room_type": room_type_id,
                                "nights": sorted(set(nights))})


@dialect_variant(_guard_queued)
def _queue_guard(uow: Any, rate_plan_id: uuid.UUID, room_type_id: uuid.UUID,
                 nights: Sequence[date]) -> None:
    """Elsewhere nothing: SQLite's write transaction holds the database for its whole life."""


def released(property_id: uuid.UUID, room_type_id: uuid.UUID, reservation: Any,
             nights: Sequence[date]) -> None:
    """`reservation` (its rate plan's) gave `nights` back (a cancel, a no-show, an edit, an
    early check-out; call with the nights locked): touch the ARI event of those that have an
    allotment with their rooms left without it (its own row is saved with the COMMIT)."""
    if not nights:
        return
    first, count = _span(nights)
    plan = reservation.rate_plan_id
    counts = allotment_counts(property_id, first, count, rate_plan_id=plan,
                              room_type_id=room_type_id,
                              exclude=reservation.id).get((plan, room_type_id), {})
    wanted = {(d - first).days for d in nights}
    known = {first + timedelta(days=o): {plan: allotment_left(*counts[o][:2]) or 0}
             for o in sorted(counts) if o in wanted}
    if TEST_HOOKS.pause_after_check is not None:  # TEST-ONLY: counted, the locks held
        TEST_HOOKS.pause_after_check()
    if known:
        ari_events.touch(property_id, room_type_id, list(known), allotments=known)


def _plan_and_type(property_id: uuid.UUID, rate_plan_id: uuid.UUID,
                   room_type_id: uuid.UUID | None) -> None:
    if RatePlan.get_or_none((RatePlan.id == rate_plan_id)
                            & (RatePlan.property == property_id)) is None:
        raise NotFound("no such rate plan")
    if room_type_id is not None and RoomType.get_or_none(
            (RoomType.id == room_type_id) & (RoomType.property == property_id)) is None:
        raise ValidationFailed("room_type_id is not a room type of this property",
                               errors=[{"field": "room_type_id",
                                        "message": "unknown room type"}])


def set_allotments(ctx: Ctx, property_id: uuid.UUID, rate_plan_id: uuid.UUID,
                   body: s.AllotmentIn) -> s.AllotmentsOut:
    """Set (or, with null, remove) the plan's allotment of a room type for from_date..to_date.

    An allotment below what the plan has already sold keeps those reservations and sells no more.

    Raises: NotFound (property, rate plan), ValidationFailed (bad range: over 366 days, a room
    type of another property)."""
    days = date_span(body.from_date, body.to_date, weekdays=body.weekdays, max_days=MAX_DAYS)
    with unit_of_work(ctx) as uow:
        prop = load_property(property_id)
        _plan_and_type(property_id, rate_plan_id, body.room_type_id)
        match = ((RatePlanAllotment.property == property_id)
                 & (RatePlanAllotment.rate_plan == rate_plan_id)
                 & (RatePlanAllotment.room_type == body.room_type_id)
                 & RatePlanAllotment.date.in_(days))
        # the nights' locks, as a booking's count and a release's take them (in date order):
        # a count never sees an allotment change half-way, and the ARI events of both follow
        # the commit order (tests/workers/test_ari_replay.py, tests/concurrency/
        # test_allotment_race.py)
        if not TEST_HOOKS.write_without_lock:
            with locking.lock_errors():
                lock_days(property_id, body.room_type_id, days)
        RatePlanAllotment.delete().where(match).execute()
        if body.allotment is not None:
            RatePlanAllotment.insert_many([
                {"id": uuid.uuid4(), "property": property_id, "rate_plan": rate_plan_id,
                 "room_type": body.room_type_id, "date": day, "allotment": body.allotment,
                 "release_days": body.release_days}
                for day in days]).execute()
        ari_events.touch(property_id, body.room_type_id, days, allotments=True)
        if TEST_HOOKS.pause_after_write is not None:  # TEST-ONLY: hold the locks a while
            TEST_HOOKS.pause_after_write()
        out = _read(property_id, rate_plan_id, body.room_type_id, body.from_date, body.to_date,
                    business_date(prop, ctx.now))
        out.data = [n for n in out.data if n.date in set(days)]
        plan = RatePlan.get_by_id(rate_plan_id)
        data = {"rate_plan_id": str(rate_plan_id), "room_type_id": str(body.room_type_id),
                "from_date": body.from_date.isoformat(), "to_date": body.to_date.isoformat(),
                "allotment": body.allotment, "release_days": body.release_days,
                "nights": to_data(out.data)}
        uow.record("rate_plan_allotment", "updated", plan, data, property_id=property_id)
    return out


def _read(property_id: uuid.UUID, rate_plan_id: uuid.UUID, room_type_id: uuid.UUID | None,
          first: date, last: date, today: date) -> s.AllotmentsOut:
    counts = allotment_counts(property_id, first, (last - first).days + 1,
                              rate_plan_id=rate_plan_id, room_type_id=room_type_id)
    data = [s.AllotmentNightOut(room_type_id=rt, date=first + timedelta(days=o),
                                allotment=allotment, sold=sold,
                                left=allotment_left(allotment, sold) or 0,
                                release_days=release,
                                held=channel_hold(allotment, sold, release,
                                                  first + timedelta(days=o), today))
            for (_plan, rt), nights in sorted(counts.items(), key=lambda kv: str(kv[0][1]))
            for o, (allotment, sold, release) in sorted(nights.items())]
    return s.AllotmentsOut(rate_plan_id=rate_plan_id, data=data)


def list_allotments(ctx: Ctx, property_id: uuid.UUID, rate_plan_id: uuid.UUID,
                    query: s.AllotmentQuery) -> s.AllotmentsOut:
    """The plan's allotments of a date range (at most 366 days), with the rooms sold on the plan
    and left, per room type and night (nights without an allotment are left out).

    Raises: NotFound, ValidationFailed."""
    date_span(query.from_date, query.to_date, max_days=MAX_DAYS)
    with read_scope(ctx):
        prop = load_property(property_id)
        _plan_and_type(property_id, rate_plan_id, query.room_type_id)
        return _read(property_id, rate_plan_id, query.room_type_id, query.from_date,
                     query.to_date, business_date(prop, ctx.now))


def touch_released(property_id: uuid.UUID, business_date: date) -> int:
    """The night audit rolled the property to `business_date`: the nights whose allotments'
    release period ends on it give their unsold held rooms back to the house; touch their ARI
    events (call inside the audit's unit of work). Returns the nights touched."""
    rows = (RatePlanAllotment.select(RatePlanAllotment.room_type, RatePlanAllotment.date,
                                     RatePlanAllotment.release_days)
            .where((RatePlanAllotment.property == property_id)
                   & RatePlanAllotment.release_days.is_null(False)
                   & (RatePlanAllotment.date >= business_date)).tuples())
    released_nights: dict[Any, set[date]] = {}
    for room_type, night, release in rows:
        night = date.fromisoformat(night) if isinstance(night, str) else night
        if (night - business_date).days == max(release, 0):
            released_nights.setdefault(room_type, set()).add(night)
    for room_type, nights in sorted(released_nights.items(), key=lambda kv: str(kv[0])):
        rt = room_type if isinstance(room_type, uuid.UUID) else uuid.UUID(str(room_type))
        ari_events.touch(property_id, rt, sorted(nights), allotments=True)
    return sum(len(n) for n in released_nights.values())
