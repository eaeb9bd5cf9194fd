"""Read side of pricing and availability: batch-load everything a search or a quote needs.

A fixed handful of statements whatever the size of the search, each compiled once per process
(`pms.db.statements`) and returning plain tuples: never one query per night, room type or plan,
and no model objects. On PostgreSQL the database does the per-night work:

- the nightly rates come back as one row per (rate plan, room type), the amounts in an array
  ordered by night (50 rows for 30 nights x 10 types x 5 plans, not 1,500);
- the rooms still for sale come back as one row per room type, an array of one count per night,
  computed in SQL by the rule of `pms.domain.availability.sellable` (rooms recounted, maintenance
  counted once per room and night with out-of-order winning, the sell limit, the rooms sold,
  the rooms room blocks hold);
- a search's rates are kept in this process by calendar month, per property and catalog version
  (`_cached_rates`): the next search of those months under the same version reads none.

SQLite (the embedded default) reads the same facts row by row and counts in Python with the
domain functions; the PostgreSQL statements are checked against them in
tests/services/test_availability_sql.py.

Everything per night is a list aligned with `SearchData.nights` (index i is night i). No writes
and no transactions of their own; call inside a read scope or a unit of work.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

from pms.clock import local_today
from pms.db.database import db, is_postgres
from pms.db.scope import require_env
from pms.db.statements import Statement, param
from pms.domain.availability import (
    ALLOTMENT_STATUSES,
    month_start,
    next_month,
    sellable_from_margin,
)
from pms.domain.pricing import OPEN, PackageLine, PriceMemo, Promo, Rule, merge_rules
from pms.models.catalog import Package
from pms.models.property import Property
from pms.models.rates import PromoCode, RateSchedule, Restriction
from pms.queries.allotments import (
    allotment_counts,
    channel_holds,
    has_allotments,
    holds_of,
    left_of,
)
from pms.queries.inventory_counts import night_counts


class _RoomType(Protocol):
    id: uuid.UUID


class _RatePlan(Protocol):
    id: uuid.UUID
    package_codes: Any


@dataclass
class SearchData:
    """Everything needed to price any (room type, rate plan) of a property for one stay."""

    arrival: date
    departure: date
    nights: list[date]
    rates: dict[tuple[uuid.UUID, uuid.UUID], list[Decimal | None]]
    restrictions: dict[date, list[tuple[uuid.UUID | None, uuid.UUID | None, Rule]]]
    sellable: dict[uuid.UUID, list[int]] | None
    packages: Mapping[str, PackageLine]
    promo: Promo | None = None
    memo: PriceMemo = field(default_factory=PriceMemo)
    # rooms left on each (rate plan, room type) with an allotment, per night (None: no
    # allotment that night); loaded with the counts (pms.queries.allotments)
    allotments: dict[tuple[uuid.UUID, uuid.UUID], list[int | None]] = field(default_factory=dict)
    # per room type and night: capacity - sold - held - every channel's hold, unclamped; and
    # the rooms each (rate plan, room type) holds (allotments with a release period), only
    # where some night holds
    margins: dict[uuid.UUID, list[int]] | None = None
    holds: dict[tuple[uuid.UUID, uuid.UUID], list[int]] = field(default_factory=dict)
    _rules: dict[tuple[uuid.UUID, uuid.UUID], dict[date, Rule]] = field(default_factory=dict)

    def rates_for(self, plan_id: uuid.UUID, room_type_id: uuid.UUID) -> list[Decimal | None]:
        """The amount of each night (None: no rate loaded for that night)."""
        found = self.rates.get((plan_id, room_type_id))
        return found if found is not None else [None] * len(self.nights)

    def rules_for(self, plan_id: uuid.UUID, room_type_id: uuid.UUID) -> dict[date, Rule]:
        """Merged restrictions per date (the nights and the departure date)."""
        key = (plan_id, room_type_id)
        cached = self._rules.get(key)
        if cached is None:
            cached = {}
            for day, rows in self.restrictions.items():
                applicable = [rule for plan, rt, rule in rows
                              if (plan is None or plan == plan_id)
                              and (rt is None or rt == room_type_id)]
                if applicable:
                    cached[day] = merge_rules(applicable)
            self._rules[key] = cached
        return cached

    def sellable_for(self, room_type_id: uuid.UUID, plan_id: uuid.UUID | None = None
                     ) -> list[int] | None:
        """Rooms still for sale on each night (never negative) after every channel's hold,
        or, with `plan_id`, after the other plans' holds (the plan's own rooms held for it
        added back); None when not loaded."""
        if self.sellable is None:
            return None
        found = self.sellable.get(room_type_id)
        if found is None:
            return [0] * len(self.nights)
        own = self.holds.get((plan_id, room_type_id)) if plan_id is not None else None
        if own is None or self.margins is None or room_type_id not in self.margins:
            return found
        return [sellable_from_margin(m + h)
                for m, h in zip(self.margins[room_type_id], own, strict=True)]

    def allotment_for(self, plan_id: uuid.UUID, room_type_id: uuid.UUID
                      ) -> list[int | None] | None:
        """Rooms left on the plan's allotment per night; None when no night has one."""
        return self.allotments.get((plan_id, room_type_id))

    def packages_for(self, plan: _RatePlan) -> list[PackageLine]:
        return [self.packages[c] for c in (plan.package_codes or []) if c in self.packages]


# -- the statements --------------------------------------------------------------------------

# NOTE: no ORDER BY inside the aggregates: both arrays are built in one pass over the same rows,
# so they stay aligned, and each amount is placed by its night's offset (a sort per (plan, room
# type) cost more than the rest of the statement). Amounts come as text so that equal amounts
# become one Decimal object (PERF: hashing 1,500 fresh Decimals cost more than pricing them).
_RATES_BY_PAIR_PG = Statement.text("availability.rates_by_pair", postgres="""
    SELECT rate_plan_id::text, room_type_id::text,
           array_agg(date - %(start)s::date), array_agg(amount::text)
    FROM rate_schedule
    WHERE env_id = %(env)s AND property_id = %(property_id)s
      AND date >= %(start)s AND date < %(end)s
    GROUP BY rate_plan_id, room_type_id""")

_RATES_OF_PROPERTY = Statement.build("availability.rates_of_property", lambda: (
    RateSchedule.select(RateSchedule.rate_plan, RateSchedule.room_type, RateSchedule.date,
                        RateSchedule.amount)
    .where((RateSchedule.env_id == param.env) & (RateSchedule.property == param.property_id)
           & (RateSchedule.date >= param.start) & (RateSchedule.date < param.end))))

_RATES_OF_PAIR = Statement.build("availability.rates_of_pair", lambda: (
    RateSchedule.select(RateSchedule.date, RateSchedule.amount)
    .where((RateSchedule.env_id == param.env) & (RateSchedule.property == param.property_id)
           & (RateSchedule.rate_plan == param.rate_plan_id)
           & (RateSchedule.room_type == param.room_type_id)
           & (RateSchedule.date >= param.start) & (RateSchedule.date < param.end))))

_RESTRICTIONS = Statement.build("availability.restrictions", lambda: (
    Restriction.select(Restriction.rate_plan, Restriction.room_type, Restriction.date,
                       Restriction.closed, Restriction.closed_to_arrival,
                       Restriction.closed_to_departure, Restriction.min_los, Restriction.max_los,
                       Restriction.min_stay_through, Restriction.max_stay_through)
    .where((Restriction.env_id == param.env) & (Restriction.property == param.property_id)
           & (Restriction.date >= param.start) & (Restriction.date <= param.last))))

_PACKAGES = Statement.build("availability.packages", lambda: (
    Package.select(Package.code, Package.calculation, Package.price, Package.currency)
    .where((Package.env_id == param.env) & (Package.property == param.property_id))))

_PROMO = Statement.build("availability.promo", lambda: (
    PromoCode.select(PromoCode.code, PromoCode.discount_type, PromoCode.discount_value,
                     PromoCode.currency, PromoCode.valid_from, PromoCode.valid_to,
                     PromoCode.min_nights, PromoCode.rate_plan_ids, PromoCode.active)
    .where((PromoCode.env_id == param.env) & (PromoCode.property == param.property_id)
           & (PromoCode.code == param.code))))

# Rooms still for sale per (room type, night), by the rule of pms.domain.availability.sellable:
# usable = rooms - rooms out of sale that night (a room counted once, whichever periods overlap);
# capacity = usable, lowered (never raised) by a sell limit of at least 0; sellable = capacity -
# sold - held by room blocks, never below 0. A night without an inventory row has no sell limit and nothing sold.
# PERF: each room type's rooms, stored nights and maintenance nights are read by index through
# LATERAL subqueries (as sparse arrays keyed by night offset) and only then spread over the
# nights: a join of the nights with inventory_day was planned as a nested loop over every pair
# whenever the statistics were young (3 ms for 10 types x 30 nights).
# The channels' holds (allotments with a release period, pms.domain.availability.channel_hold)
# are subtracted too, judged against the business date (`business_date`, else the property's,
# else its local date at `now`): each row is (room type, sellable per night, margin per night),
# the margin unclamped (capacity - sold - held - holds) so that a plan's own hold can be added
# back (`SearchData.sellable_for`).
_HOLD_STATUSES = ", ".join(f"'{s}'" for s in ALLOTMENT_STATUSES)
SELLABLE_SQL = f"""
    SELECT t.id::text, ARRAY(
        SELECT GREATEST(m.x, 0) FROM unnest(margin.x) WITH ORDINALITY AS m(x, i) ORDER BY m.i),
        margin.x
    FROM room_type t
    CROSS JOIN (SELECT coalesce(%(business_date)s::date, (
        SELECT coalesce(p.business_date,
                        (coalesce(%(now)s::timestamptz, now()) AT TIME ZONE p.timezone)::date)
        FROM property p WHERE p.env_id = %(env)s AND p.id = %(property_id)s)) AS d) bd
    CROSS JOIN LATERAL (
        SELECT count(*)::int AS n FROM room r
        WHERE r.env_id = %(env)s AND r.room_type_id = t.id) rooms
    CROSS JOIN LATERAL (
        SELECT array_agg(d.date - %(start)s::date) AS i, array_agg(d.sell_limit) AS sell_limit,
               array_agg(d.sold) AS sold, array_agg(d.held) AS held
        FROM inventory_day d
        WHERE d.env_id = %(env)s AND d.room_type_id = t.id
          AND d.date >= %(start)s::date AND d.date < %(start)s::date + %(count)s) inv
    CROSS JOIN LATERAL (
        SELECT array_agg(x.i) AS i, array_agg(x.n) AS n FROM (
            SELECT g.i, count(DISTINCT m.room_id)::int AS n
            FROM room r
            JOIN maintenance m ON m.env_id = r.env_id AND m.room_id = r.id
            CROSS JOIN LATERAL generate_series(
                GREATEST(m.from_date, %(start)s::date) - %(start)s::date,
                LEAST(m.to_date, %(start)s::date + %(count)s - 1) - %(start)s::date) AS g(i)
            WHERE r.env_id = %(env)s AND r.room_type_id = t.id
              AND m.property_id = %(property_id)s AND m.active
              AND m.from_date < %(start)s::date + %(count)s AND m.to_date >= %(start)s::date
            GROUP BY g.i) x) down
    CROSS JOIN LATERAL (
        SELECT array_agg(h.i) AS i, array_agg(h.n) AS n FROM (
            SELECT a.date - %(start)s::date AS i,
                   sum(GREATEST(GREATEST(a.allotment, 0) - (
                       SELECT count(*) FROM reservation r
                       WHERE r.env_id = a.env_id AND r.rate_plan_id = a.rate_plan_id
                         AND r.room_type_id = a.room_type_id AND r.status IN ({_HOLD_STATUSES})
                         AND r.arrival_date <= a.date AND r.departure_date > a.date), 0))::int
                   AS n
            FROM rate_plan_allotment a
            WHERE a.env_id = %(env)s AND a.room_type_id = t.id
              AND a.date >= %(start)s::date AND a.date < %(start)s::date + %(count)s
              AND a.release_days IS NOT NULL AND a.date - GREATEST(a.release_days, 0) > bd.d
            GROUP BY a.date) h) hold
    CROSS JOIN LATERAL (
        SELECT ARRAY(
            SELECT LEAST(GREATEST(rooms.n - coalesce(down.n[array_position(down.i, g.i)], 0), 0),
                         GREATEST(coalesce(inv.sell_limit[array_position(inv.i, g.i)],
                                           2147483647), 0))
                   - GREATEST(coalesce(inv.sold[array_position(inv.i, g.i)], 0), 0)
                   - GREATEST(coalesce(inv.held[array_position(inv.i, g.i)], 0), 0)
                   - coalesce(hold.n[array_position(hold.i, g.i)], 0)
            FROM generate_series(0, %(count)s - 1) AS g(i) ORDER BY g.i) AS x) margin
    WHERE t.env_id = %(env)s AND t.property_id = %(property_id)s"""
_SELLABLE_PG = Statement.text("availability.sellable", postgres=SELLABLE_SQL)
# The same statement for one room type (the ARI event of a booking computes its
# nights with it, in the batch sent with the COMMIT; pms.services.distribution.ari_events)
SELLABLE_OF_TYPE_PG = Statement.text("availability.sellable_of_type",
                                     postgres=SELLABLE_SQL + " AND t.id = %(room_type)s")


# -- loading ---------------------------------------------------------------------------------

def _as_date(value: Any) -> date:
    return date.fromisoformat(value) if isinstance(value, str) else value


def _as_amount(value: Any) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(str(value))


# -- the rates of a search, cached by month per catalog version (PostgreSQL) --------------------
#
# PERF ("cached per rate-plan version"): a search reads every (rate plan, room type)'s
# amounts for its nights, 1,500 of them for 30 nights x 10 types x 5 plans, and rates change far
# less often than guests search. They are kept here by (env, property, catalog version, calendar
# month). The version is the catalog fingerprint the search has just read in the same round trip
# as the property (`pms.queries.catalog.property_catalog`): rates are written only by
# `pms.services.rates.rates.set_rates`, whose event bumps its rate plan's version in the same
# transaction, and a deleted plan or room type changes the count, so a new version is seen by
# the next search and the database stays the source of truth. The fingerprint is read BEFORE the
# rates, so a month loaded while rates change is stored under the older version, never a newer
# one. Only committed rates are kept: a search inside a transaction (which may hold its own
# uncommitted rate change, under a version a later change could take again) reads them afresh.
# A search of one (rate plan, room type) reads its few rows by their key and is not cached.
# Per process, bounded; nothing to share between hosts. A property's months are kept for ONE
# version, the last one a search read: a search that reads another version drops
# the property's months of the version before, so superseded prices do not wait for the bound.
# Every writer of rates moves the version: RateSchedule refuses a write whose unit of work
# emits no event of its plan (pms.db.versioned).

RATE_MONTHS_CACHE_SIZE = 4096
# (env, property) -> (the catalog version, {month: {(plan, room type): amounts}})
_rate_months: dict[tuple[object, ...],
                   tuple[tuple[object, ...], dict[date, dict[tuple[str, str],
                                                           list[Decimal | None]]]]] = {}


def rate_cache_keys() -> list[tuple[object, ...]]:
    """(env, property, version, month) of every month the cache holds (for tests and
    diagnostics)."""
    return [(*owner, version, month) for owner, (version, months) in list(_rate_months.items())
            for month in list(months)]


def _load_months(property_id: uuid.UUID, start: date, stop: date
                 ) -> dict[date, dict[tuple[str, str], list[Decimal | None]]]:
    """Every (rate plan, room type)'s amounts of the whole months from `start` to `stop` (both
    a month's first day), by month, each list indexed by the day of the month - 1."""
    months: dict[date, dict[tuple[str, str], list[Decimal | None]]] = {}
    bounds = []  # (offset of the month's first day from `start`, of the next month's, month)
    month = start
    while month < stop:
        months[month] = {}
        bounds.append(((month - start).days, (next_month(month) - start).days, month))
        month = next_month(month)
    decimals: dict[str, Decimal] = {}
    for plan_raw, rt_raw, offsets, amounts in _RATES_BY_PAIR_PG.rows(
            property_id=property_id, start=start, end=stop):
        key = (plan_raw, rt_raw)
        for offset, text in zip(offsets, amounts, strict=True):
            amount = decimals.get(text)
            if amount is None:
                amount = decimals[text] = Decimal(text)
            for first, after, m in bounds:
                if first <= offset < after:
                    per = months[m].get(key)
                    if per is None:
                        per = months[m][key] = [None] * (after - first)
                    per[offset - first] = amount
                    break
    return months


def _cached_rates(property_id: uuid.UUID, pairs: set[tuple[uuid.UUID, uuid.UUID]],
                  arrival: date, count: int, version: tuple[object, ...]
                  ) -> dict[tuple[uuid.UUID, uuid.UUID], list[Decimal | None]]:
    """`_load_rates` through the month cache: the missing months in one statement."""
    env = require_env()
    end = arrival + timedelta(days=count)
    firsts = []
    month = month_start(arrival)
    while month < end:
        firsts.append(month)
        month = next_month(month)
    owner = (env, property_id)
    held = _rate_months.get(owner)
    months = held[1] if held is not None and held[0] == version else {}  # (another: dropped)
    found = {m: months.get(m) for m in firsts}
    missing = [m for m, rates in found.items() if rates is None]
    if missing:
        loaded = _load_months(property_id, missing[0], next_month(missing[-1]))
        if sum(len(kept) for _, kept in list(_rate_months.values())) + len(loaded) > \
                RATE_MONTHS_CACHE_SIZE:
            _rate_months.clear()  # rare: more months of more properties than the bound
        months = {**months, **loaded}  # (a new dict: a reader holds the one it got)
        found.update(loaded)
    if held is None or held[1] is not months:
        _rate_months[owner] = (version, months)
    # each pair's nights: one slice of each month the stay touches
    segments = []
    for m in firsts:
        first = max(m, arrival)
        segments.append((found[m] or {}, first.day - 1, (min(next_month(m), end) - first).days))
    out: dict[tuple[uuid.UUID, uuid.UUID], list[Decimal | None]] = {}
    for plan_id, rt_id in pairs:
        key = (str(plan_id), str(rt_id))
        per: list[Decimal | None] = []
        for rates, start, length in segments:
            amounts = rates.get(key)
            per.extend(amounts[start:start + length] if amounts is not None else [None] * length)
        out[(plan_id, rt_id)] = per
    return out


def _load_rates(property_id: uuid.UUID, pairs: set[tuple[uuid.UUID, uuid.UUID]], arrival: date,
                count: int, version: tuple[object, ...] | None = None
                ) -> dict[tuple[uuid.UUID, uuid.UUID], list[Decimal | None]]:
    """The nightly amounts of each wanted (rate plan, room type), aligned with the nights.
    With the catalog's `version` (a search, on PostgreSQL, outside a transaction) through the
    month cache."""
    if not pairs:
        return {}
    if version and len(pairs) > 1 and is_postgres() and not db.in_transaction():
        return _cached_rates(property_id, pairs, arrival, count, version)
    end = arrival + timedelta(days=count)
    out: dict[tuple[uuid.UUID, uuid.UUID], list[Decimal | None]] = {}
    if len(pairs) == 1:  # a quote or a booking: one pair's rows only
        ((plan_id, rt_id),) = pairs
        per: list[Decimal | None] = [None] * count
        for day, amount in _RATES_OF_PAIR.rows(property_id=property_id, rate_plan_id=plan_id,
                                                room_type_id=rt_id, start=arrival, end=end):
            per[(_as_date(day) - arrival).days] = _as_amount(amount)
        return {(plan_id, rt_id): per}
    if is_postgres():
        # PERF: ids converted once per (plan, room type), never per night
        wanted = {(str(p), str(r)): (p, r) for p, r in pairs}
        decimals: dict[str, Decimal] = {}
        for plan_raw, rt_raw, offsets, amounts in _RATES_BY_PAIR_PG.rows(
                property_id=property_id, start=arrival, end=end):
            key = wanted.get((plan_raw, rt_raw))
            if key is None:
                continue
            per = [None] * count
            for i, text in zip(offsets, amounts, strict=True):
                amount = decimals.get(text)
                if amount is None:
                    amount = decimals[text] = Decimal(text)
                per[i] = amount
            out[key] = per
        return out
    for plan_raw, rt_raw, day, amount in _RATES_OF_PROPERTY.rows(
            property_id=property_id, start=arrival, end=end):
        key = (uuid.UUID(plan_raw), uuid.UUID(rt_raw))
        if key not in pairs:
            continue
        per = out.get(key)
        if per is None:
            per = out[key] = [None] * count
        per[(_as_date(day) - arrival).days] = _as_amount(amount)
    return out


def load_restrictions(property_id: uuid.UUID, plan_ids: set[uuid.UUID],
                       rt_ids: set[uuid.UUID], arrival: date, departure: date
                       ) -> dict[date, list[tuple[uuid.UUID | None, uuid.UUID | None, Rule]]]:
    """The restrictions that are not open, of the stay's dates (its departure included), for
    the plans and room types searched (a null plan or room type means all of them)."""
    out: dict[date, list[tuple[uuid.UUID | None, uuid.UUID | None, Rule]]] = defaultdict(list)
    for (plan_id, rt_id, day, closed, cta, ctd, min_los, max_los, min_through,
         max_through) in _RESTRICTIONS.typed_rows(property_id=property_id, start=arrival,
                                                  last=departure):
        if plan_id is not None and plan_id not in plan_ids:
            continue
        if rt_id is not None and rt_id not in rt_ids:
            continue
        rule = Rule(closed=bool(closed), closed_to_arrival=bool(cta),
                    closed_to_departure=bool(ctd), min_los=min_los, max_los=max_los,
                    min_stay_through=min_through, max_stay_through=max_through)
        if rule != OPEN:
            out[day].append((plan_id, rt_id, rule))
    return dict(out)


def load_packages(property_id: uuid.UUID) -> dict[str, PackageLine]:
    """The property's packages by code."""
    return {code: PackageLine(code=code, calculation=calculation, price=price, currency=currency)
            for code, calculation, price, currency
            in _PACKAGES.typed_rows(property_id=property_id)}


def business_date_at(property_id: uuid.UUID, now: datetime | None = None) -> date:
    """The property's business date (else its local date at `now`, the clock's by default):
    the day the channels' holds are judged against (the SQL's `bd`)."""
    row = (Property.select(Property.business_date, Property.timezone)
           .where(Property.id == property_id).tuples().first())
    if row is None:
        return (now or datetime.now(UTC)).date()
    stored, tz = row
    if stored is not None:
        return _as_date(stored)
    return local_today(now or datetime.now(UTC), tz)


def _holds_by_type(property_id: uuid.UUID, arrival: date, count: int, business_date: date
                   ) -> dict[uuid.UUID, list[int]]:
    """Every plan's hold summed per room type and night (Python's path)."""
    out: dict[uuid.UUID, list[int]] = {}
    for (_plan, rt), per in channel_holds(property_id, arrival, count, business_date).items():
        have = out.setdefault(rt, [0] * count)
        for i, n in enumerate(per):
            have[i] += n
    return out


def load_sellable_margins(property_id: uuid.UUID, room_type_ids: Iterable[uuid.UUID],
                          arrival: date, count: int, *, business_date: date | None = None,
                          now: datetime | None = None
                          ) -> dict[uuid.UUID, tuple[list[int], list[int]]]:
    """(rooms for sale, margin) per room type and night: the sellable count after every
    channel's hold, and capacity - sold - held - holds unclamped (a plan's own hold added
    back to it gives what that plan may sell, `SearchData.sellable_for`)."""
    ids = list(room_type_ids)
    if not ids or count <= 0:
        return {rt: ([], []) for rt in ids}
    if is_postgres():
        wanted = {str(rt): rt for rt in ids}
        out = {}
        for rt_raw, per_night, margins in _SELLABLE_PG.rows(
                property_id=property_id, start=arrival, count=count,
                business_date=business_date, now=now):
            rt = wanted.get(rt_raw)
            if rt is not None:
                out[rt] = (list(per_night), list(margins))
        return out
    if business_date is None:
        business_date = business_date_at(property_id, now)
    counts = night_counts(property_id, ids, arrival, arrival + timedelta(days=count))
    holds = _holds_by_type(property_id, arrival, count, business_date)
    nights = [arrival + timedelta(days=i) for i in range(count)]
    result = {}
    for rt in ids:
        per = holds.get(rt) or [0] * count
        margins = [counts[(rt, n)].margin(per[i]) for i, n in enumerate(nights)]
        result[rt] = ([sellable_from_margin(m) for m in margins], margins)
    return result


def load_sellable(property_id: uuid.UUID, room_type_ids: Iterable[uuid.UUID], arrival: date,
                  count: int, *, business_date: date | None = None,
                  now: datetime | None = None) -> dict[uuid.UUID, list[int]]:
    """Rooms still for sale per room type and night (aligned with the `count` nights from
    `arrival`), after every channel's hold: exact counts, as
    `pms.queries.inventory_counts.night_counts` and the holds give them."""
    return {rt: house for rt, (house, _m) in load_sellable_margins(
        property_id, room_type_ids, arrival, count, business_date=business_date,
        now=now).items()}


def promo_of(row: PromoCode) -> Promo:
    return Promo(code=row.code, discount_type=row.discount_type, value=row.discount_value,
                 currency=row.currency, valid_from=row.valid_from, valid_to=row.valid_to,
                 min_nights=row.min_nights,
                 rate_plan_ids=frozenset(uuid.UUID(str(i)) for i in row.rate_plan_ids or []),
                 active=row.active)


def find_promo(property_id: uuid.UUID, code: str) -> PromoCode | None:
    """A property's promo code by its code, case-insensitively (codes are stored upper-case)."""
    return PromoCode.get_or_none((PromoCode.property == property_id)
                                 & (PromoCode.code == code.strip().upper()))


def load_promo(property_id: uuid.UUID, code: str) -> Promo | None:
    """`find_promo` as a plain `Promo` (one compiled statement, no model object)."""
    row = _PROMO.typed_rows(property_id=property_id, code=code.strip().upper())
    if not row:
        return None
    code_, kind, value, currency, valid_from, valid_to, min_nights, plan_ids, active = row[0]
    return Promo(code=code_, discount_type=kind, value=value, currency=currency,
                 valid_from=valid_from, valid_to=valid_to, min_nights=min_nights,
                 rate_plan_ids=frozenset(uuid.UUID(str(i)) for i in plan_ids or []),
                 active=bool(active))


def block_rates(block_id: uuid.UUID, room_type_id: uuid.UUID,
                nights: Sequence[date]) -> dict[date, Decimal]:
    """The block's rate grid for one room type over `nights`: the contracted price of each
    night that has one (a night without is priced by the block's rate plan)."""
    from pms.models.room_blocks import RoomBlockNight

    if not nights:
        return {}
    query = (RoomBlockNight.select(RoomBlockNight.date, RoomBlockNight.rate)
             .where((RoomBlockNight.block == block_id)
                    & (RoomBlockNight.room_type_id == room_type_id)
                    & (RoomBlockNight.date >= min(nights)) & (RoomBlockNight.date <= max(nights))
                    & RoomBlockNight.rate.is_null(False)).tuples())
    return {day: rate for day, rate in query}


def load_search_data(property_id: uuid.UUID, room_types: Iterable[_RoomType],
                     rate_plans: Iterable[_RatePlan], arrival: date, departure: date,
                     nights: list[date], *, promo_code: str | None = None,
                     with_counts: bool = True,
                     packages: Mapping[str, PackageLine] | None = None,
                     rates_version: tuple[object, ...] | None = None,
                     business_date: date | None = None) -> SearchData:
    """Batch-load rates, restrictions, inventory counts, packages and the promo code.

    `room_types` and `rate_plans` are models or the catalog's rows (`pms.queries.catalog`);
    `packages`, when the caller has the property's packages already (the catalog), saves their
    read. `with_counts=False` skips the inventory counts and the allotments (a booking recounts
    them under its lock): quotes built from such data say nothing about sold-out nights. `rates_version`,
    the catalog's version a search has just read (`Catalog.version`), lets the rates come from
    the month cache (`_cached_rates`). `business_date`: the day the channels' holds are
    judged against (the property's, read, by default).
    """
    rt_ids = {rt.id for rt in room_types}
    plans = list(rate_plans)
    plan_ids = {p.id for p in plans}
    count = len(nights)
    rates = _load_rates(property_id, {(p, r) for p in plan_ids for r in rt_ids}, arrival, count,
                        rates_version)
    restrictions = load_restrictions(property_id, plan_ids, rt_ids, arrival, departure)
    if packages is None:
        packages = (load_packages(property_id)
                    if any(p.package_codes for p in plans) else {})
    promo = load_promo(property_id, promo_code) if promo_code is not None else None
    sellable = margins = None
    if with_counts:
        loaded = load_sellable_margins(property_id, rt_ids, arrival, count,
                                       business_date=business_date)
        sellable = {rt: house for rt, (house, _m) in loaded.items()}
        margins = {rt: m for rt, (_h, m) in loaded.items()}
    allotments: dict[tuple[uuid.UUID, uuid.UUID], list[int | None]] = {}
    holds: dict[tuple[uuid.UUID, uuid.UUID], list[int]] = {}
    if with_counts and has_allotments(property_id, version=rates_version):
        counts = {k: v for k, v in allotment_counts(property_id, arrival, count).items()
                  if k[0] in plan_ids and k[1] in rt_ids}
        allotments = left_of(counts, count)
        holds = holds_of(counts, arrival, count,
                         business_date or business_date_at(property_id))
    return SearchData(arrival=arrival, departure=departure, nights=nights, rates=rates,
                      restrictions=restrictions, sellable=sellable, packages=packages,
                      promo=promo, allotments=allotments, margins=margins, holds=holds)
