"""Read side of pricing and availability: batch-load everything a search or a quote needs.

A fixed handful of queries whatever the size of the search (rooms, maintenance, inventory,
rates, restrictions, packages, promo code): never one query per night, room type or plan.
No writes and no transactions of its own; call inside a read scope or a unit of work.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

from pms.db.database import db
from pms.domain.availability import NightCount
from pms.domain.pricing import OPEN, PackageLine, Promo, Rule, merge_rules
from pms.models.catalog import Package, RatePlan
from pms.models.property import RoomType
from pms.models.rates import PromoCode, RateSchedule, Restriction
from pms.services.inventory import night_counts


@dataclass
class SearchData:
    """Everything needed to price any (room type, rate plan) of a property for one stay."""

    arrival: date
    departure: date
    nights: list[date]
    rates: dict[tuple[uuid.UUID, uuid.UUID], dict[date, Decimal]]
    restrictions: dict[date, list[tuple[uuid.UUID | None, uuid.UUID | None, Rule]]]
    counts: dict[tuple[uuid.UUID, date], NightCount] | None
    packages: dict[str, PackageLine]
    promo: Promo | None = None
    _rules: dict[tuple[uuid.UUID, uuid.UUID], dict[date, Rule]] = field(default_factory=dict)
    _sellable: dict[uuid.UUID, dict[date, int]] = field(default_factory=dict)

    def rates_for(self, plan_id: uuid.UUID, room_type_id: uuid.UUID) -> dict[date, Decimal]:
        return self.rates.get((plan_id, room_type_id), {})

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

    def sellable_for(self, room_type_id: uuid.UUID) -> dict[date, int] | None:
        if self.counts is None:
            return None
        cached = self._sellable.get(room_type_id)
        if cached is None:
            cached = self._sellable[room_type_id] = {
                n: self.counts[(room_type_id, n)].sellable for n in self.nights
                if (room_type_id, n) in self.counts}
        return cached

    def packages_for(self, plan: RatePlan) -> list[PackageLine]:
        return [self.packages[c] for c in (plan.package_codes or []) if c in self.packages]


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


def load_search_data(property_id: uuid.UUID, room_types: Iterable[RoomType],
                     rate_plans: Iterable[RatePlan], arrival: date, departure: date,
                     nights: list[date], *, promo_code: str | None = None,
                     with_counts: bool = True) -> SearchData:
    """Batch-load rates, restrictions, inventory counts, packages and the promo code.

    `with_counts=False` skips the inventory counts (a booking recounts them under its lock):
    quotes built from such data say nothing about sold-out nights.
    """
    rt_ids = [rt.id for rt in room_types]
    plans = list(rate_plans)
    plan_ids = [p.id for p in plans]
    rates: dict[tuple[uuid.UUID, uuid.UUID], dict[date, Decimal]] = {}
    if rt_ids and plan_ids:
        query = (RateSchedule.select(RateSchedule.rate_plan.cast("text"),
                                     RateSchedule.room_type.cast("text"),
                                     RateSchedule.date, RateSchedule.amount)
                 .where((RateSchedule.property == property_id)
                        & RateSchedule.rate_plan.in_(plan_ids) & RateSchedule.room_type.in_(rt_ids)
                        & (RateSchedule.date >= arrival) & (RateSchedule.date < departure)))
        # PERF: up to nights x types x plans rows; read the cursor directly with the ids as
        # text and group by them, so ids are converted once per (plan, room type), not per row.
        grouped: dict[tuple[object, object], dict[date, Decimal]] = {}
        for plan_raw, rt_raw, day, amount in db.execute(query).fetchall():
            per = grouped.get((plan_raw, rt_raw))
            if per is None:
                per = grouped[(plan_raw, rt_raw)] = {}
            if isinstance(day, str):          # SQLite
                day = date.fromisoformat(day)
            per[day] = amount if isinstance(amount, Decimal) else Decimal(str(amount))
        for (plan_raw, rt_raw), per in grouped.items():
            rates[(uuid.UUID(str(plan_raw)), uuid.UUID(str(rt_raw)))] = per
    restrictions: dict[date, list[tuple[uuid.UUID | None, uuid.UUID | None, Rule]]] = \
        defaultdict(list)
    rrows = (Restriction.select(Restriction.rate_plan, Restriction.room_type, Restriction.date,
                                Restriction.closed, Restriction.closed_to_arrival,
                                Restriction.closed_to_departure, Restriction.min_los,
                                Restriction.max_los)
             .where((Restriction.property == property_id)
                    & (Restriction.date >= arrival) & (Restriction.date <= departure)
                    & (Restriction.rate_plan.is_null() | Restriction.rate_plan.in_(plan_ids or [None]))
                    & (Restriction.room_type.is_null() | Restriction.room_type.in_(rt_ids or [None])))
             .tuples())
    for plan_id, rt_id, day, closed, cta, ctd, min_los, max_los in rrows:
        rule = Rule(closed=bool(closed), closed_to_arrival=bool(cta),
                    closed_to_departure=bool(ctd), min_los=min_los, max_los=max_los)
        if rule != OPEN:
            restrictions[day].append((plan_id, rt_id, rule))
    codes = sorted({c for p in plans for c in (p.package_codes or [])})
    packages: dict[str, PackageLine] = {}
    if codes:
        for pkg in Package.select().where((Package.property == property_id)
                                          & Package.code.in_(codes)):
            packages[pkg.code] = PackageLine(code=pkg.code, calculation=pkg.calculation,
                                             price=pkg.price, currency=pkg.currency)
    promo = None
    if promo_code is not None:
        row = find_promo(property_id, promo_code)
        promo = promo_of(row) if row is not None else None
    counts = (night_counts(property_id, rt_ids, arrival, arrival + timedelta(days=len(nights)))
              if with_counts else None)
    return SearchData(arrival=arrival, departure=departure, nights=nights, rates=rates,
                      restrictions=dict(restrictions), counts=counts, packages=packages,
                      promo=promo)
