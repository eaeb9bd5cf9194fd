"""Read side of allotments: per rate plan, room type and night, the allotment and the
rooms the plan has sold (its live reservations of the type that spend the night,
`pms.domain.availability.ALLOTMENT_STATUSES`), and from them the rooms left
(`pms.domain.availability.allotment_left`).

Two paths, proven equal on PostgreSQL on randomized data (tests/services/test_rule_equivalence.py
::test_allotment_counts_match_the_reference): `_counts_by_models`, the reference (rows read,
counted in Python; SQLite's path), and `_COUNTS_PG`, one statement that counts in SQL under the
reservations' (env, rate plan, room type, arrival) index (the search's and the booking's path on
PostgreSQL). The booking calls it under its night locks (pms.services.inventory.allotments). No
writes; call inside a read scope or a unit of work.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import date, timedelta
from typing import Any

from pms.db.database import is_postgres
from pms.db.scope import require_env
from pms.db.statements import Statement, param
from pms.domain.availability import ALLOTMENT_STATUSES, allotment_left, channel_hold
from pms.models.rates import RatePlanAllotment
from pms.models.reservations import Reservation

# (rate plan, room type) -> {night offset from start: (allotment, sold, release_days)}
Counts = dict[tuple[uuid.UUID, uuid.UUID], dict[int, tuple[int, int, int | None]]]

_STATUSES_SQL = ", ".join(f"'{s}'" for s in ALLOTMENT_STATUSES)
_COUNTS_PG = Statement.text("allotments.counts", postgres=f"""
    SELECT a.rate_plan_id::text, a.room_type_id::text, a.date - %(start)s::date, a.allotment,
           (SELECT count(*)::int FROM reservation r
            WHERE r.env_id = a.env_id AND r.rate_plan_id = a.rate_plan_id
              AND r.room_type_id = a.room_type_id AND r.status IN ({_STATUSES_SQL})
              AND r.arrival_date <= a.date AND r.departure_date > a.date
              AND (%(exclude)s::uuid IS NULL OR r.id <> %(exclude)s::uuid)),
           a.release_days
    FROM rate_plan_allotment a
    WHERE a.env_id = %(env)s AND a.property_id = %(property_id)s
      AND a.date >= %(start)s::date AND a.date < %(start)s::date + %(count)s::int
      AND (%(plan)s::uuid IS NULL OR a.rate_plan_id = %(plan)s::uuid)
      AND (%(room_type)s::uuid IS NULL OR a.room_type_id = %(room_type)s::uuid)
    ORDER BY a.rate_plan_id, a.room_type_id, a.date""")

# The booking's guard (migration 046), queued with its COMMIT where it skipped the count on a
# plan it read without allotments before its night locks (`has_allotments` at that version):
# the transaction fails (40001, 503 retry) when an allotment of the plan was set on the nights
# meanwhile. PostgreSQL only: SQLite's write transaction is serialized whole (BEGIN IMMEDIATE).
ALLOTMENT_GUARD = Statement.text("allotments.guard", postgres=(
    "SELECT pms_allotment_guard(%(env)s, %(plan)s, %(room_type)s, %(nights)s::date[])"))

_ALLOTMENT_ROWS = Statement.build("allotments.rows", lambda: (
    RatePlanAllotment.select(RatePlanAllotment.rate_plan, RatePlanAllotment.room_type,
                             RatePlanAllotment.date, RatePlanAllotment.allotment,
                             RatePlanAllotment.release_days)
    .where((RatePlanAllotment.env_id == param.env)
           & (RatePlanAllotment.property == param.property_id)
           & (RatePlanAllotment.date >= param.start) & (RatePlanAllotment.date < param.end))
    .order_by(RatePlanAllotment.rate_plan, RatePlanAllotment.room_type,
              RatePlanAllotment.date)))

_LIVE_STAYS = Statement.build("allotments.live_stays", lambda: (
    Reservation.select(Reservation.id, Reservation.rate_plan, Reservation.room_type,
                       Reservation.arrival_date, Reservation.departure_date)
    .where((Reservation.env_id == param.env) & (Reservation.property == param.property_id)
           & Reservation.status.in_(list(ALLOTMENT_STATUSES))
           & (Reservation.arrival_date < param.end) & (Reservation.departure_date > param.start))
    .order_by(Reservation.id)))


def _uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def _day(value: Any) -> date:
    return date.fromisoformat(value) if isinstance(value, str) else value


def _counts_by_models(property_id: uuid.UUID, start: date, count: int,
                      plan: uuid.UUID | None, room_type: uuid.UUID | None,
                      exclude: uuid.UUID | None) -> Counts:
    """The reference: the allotment rows and the live reservations, counted in Python."""
    end = start + timedelta(days=count)
    out: Counts = defaultdict(dict)
    for plan_raw, rt_raw, day, allotment, release in _ALLOTMENT_ROWS.typed_rows(
            property_id=property_id, start=start, end=end):
        key = (_uuid(plan_raw), _uuid(rt_raw))
        if (plan is None or key[0] == plan) and (room_type is None or key[1] == room_type):
            out[key][(_day(day) - start).days] = (
                int(allotment), 0, None if release is None else int(release))
    if not out:
        return {}
    for res_id, plan_raw, rt_raw, arrival, departure in _LIVE_STAYS.typed_rows(
            property_id=property_id, start=start, end=end):
        nights = out.get((_uuid(plan_raw), _uuid(rt_raw)))
        if nights is None or (exclude is not None and _uuid(res_id) == exclude):
            continue
        arrival, departure = _day(arrival), _day(departure)
        for offset, (allotment, sold, release) in list(nights.items()):
            if arrival <= start + timedelta(days=offset) < departure:
                nights[offset] = (allotment, sold + 1, release)
    return dict(out)


def _counts_in_sql(property_id: uuid.UUID, start: date, count: int,
                   plan: uuid.UUID | None, room_type: uuid.UUID | None,
                   exclude: uuid.UUID | None) -> Counts:
    out: Counts = defaultdict(dict)
    for plan_raw, rt_raw, offset, allotment, sold, release in _COUNTS_PG.rows(
            property_id=property_id, start=start, count=count, plan=plan, room_type=room_type,
            exclude=exclude):
        out[(uuid.UUID(plan_raw), uuid.UUID(rt_raw))][int(offset)] = (
            int(allotment), int(sold), None if release is None else int(release))
    return dict(out)


_HAS_ANY: dict[tuple[Any, ...], bool] = {}
_CACHE_MAX = 4096


def has_allotments(property_id: uuid.UUID, *, rate_plan_id: uuid.UUID | None = None,
                   version: Any = None) -> bool:
    """Whether the property (or one rate plan of it) has any allotment at all. With `version`
    (the plan's, or the catalog's for a search) the answer is kept per process: every allotment
    write records an event on its plan, which moves both (`pms.services.inventory.allotments`),
    so PERF: a booking or a search at a property that uses none reads nothing more."""
    key = None if version is None else (require_env(), property_id, rate_plan_id, version)
    found = _HAS_ANY.get(key) if key is not None else None
    if found is None:
        query = RatePlanAllotment.select(RatePlanAllotment.id).where(
            RatePlanAllotment.property == property_id)
        if rate_plan_id is not None:
            query = query.where(RatePlanAllotment.rate_plan == rate_plan_id)
        found = query.exists()
        if key is not None:
            if len(_HAS_ANY) >= _CACHE_MAX:
                _HAS_ANY.clear()
            _HAS_ANY[key] = found
    return found


def allotment_counts(property_id: uuid.UUID, start: date, count: int, *,
                     rate_plan_id: uuid.UUID | None = None,
                     room_type_id: uuid.UUID | None = None,
                     exclude: uuid.UUID | None = None, reference: bool = False) -> Counts:
    """(allotment, rooms sold on the plan, release days or None) per (rate plan, room type)
    and night offset of the
    `count` nights from `start`, for the nights that have an allotment; one plan or room type
    when given. `exclude`: a reservation not to count (the booking being made or edited).
    `reference`: the Python path on PostgreSQL too (the equivalence test)."""
    if count <= 0:
        return {}
    run = _counts_in_sql if is_postgres() and not reference else _counts_by_models
    return run(property_id, start, count, rate_plan_id, room_type_id, exclude)


def allotments_left(property_id: uuid.UUID, start: date, count: int, **filters: Any
                    ) -> dict[tuple[uuid.UUID, uuid.UUID], list[int | None]]:
    """Rooms left on each (rate plan, room type) that has an allotment on some of the `count`
    nights, one entry per night (None: no allotment that night)."""
    return left_of(allotment_counts(property_id, start, count, **filters), count)


def left_of(counts: Counts, count: int) -> dict[tuple[uuid.UUID, uuid.UUID], list[int | None]]:
    """`allotments_left` of counts already read."""
    out: dict[tuple[uuid.UUID, uuid.UUID], list[int | None]] = {}
    for key, nights in counts.items():
        per: list[int | None] = [None] * count
        for offset, (allotment, sold, _release) in nights.items():
            per[offset] = allotment_left(allotment, sold)
        out[key] = per
    return out


def holds_of(counts: Counts, start: date, count: int, business_date: date
             ) -> dict[tuple[uuid.UUID, uuid.UUID], list[int]]:
    """Rooms each (rate plan, room type) holds per night of `counts` on `business_date`
    (`pms.domain.availability.channel_hold`); only the pairs that hold some night."""
    out: dict[tuple[uuid.UUID, uuid.UUID], list[int]] = {}
    for key, nights in counts.items():
        per = [0] * count
        for offset, (allotment, sold, release) in nights.items():
            if 0 <= offset < count:
                per[offset] = channel_hold(allotment, sold, release,
                                           start + timedelta(days=offset), business_date)
        if any(per):
            out[key] = per
    return out


def channel_holds(property_id: uuid.UUID, start: date, count: int, business_date: date, *,
                  room_type_id: uuid.UUID | None = None
                  ) -> dict[tuple[uuid.UUID, uuid.UUID], list[int]]:
    """`holds_of` the property's allotments (one room type when given)."""
    return holds_of(allotment_counts(property_id, start, count, room_type_id=room_type_id),
                    start, count, business_date)
