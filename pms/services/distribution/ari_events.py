"""ARI on the bus: `hotel:pms:ari:updated`, one event per property, room type and
calendar month of nights touched, emitted in the transaction of the change.

ONE place: whatever changes what can be sold calls `touch` inside its unit of work (the
inventory row locks do it for bookings, edits, cancels, no-shows, early check-outs, maintenance,
sell limits and allotments: `pms.services.inventory.night_locks.lock_days` and the booking's
fast path; rate and restriction writes name their rate plans). At the end of the unit of work,
still inside its transaction, `_flush` bumps each touched room type's ARI stream (`ari_stream`,
locked in room type id order, so the events' `aggregateversion` follows commit order), THEN
reads the nights back with the search's own statements
(`pms.queries.availability.load_sellable`, the reference formula of `pms.domain.availability`),
so an event always carries what a search would answer once it commits. A future seller of nights
(blocks) hooks in with one `touch` call.

Event data: `property_id`, `room_type_id`, `room_type_code`, `rate_plans: {rate_plan_id: {code,
currency, negotiated, active}}` for every plan the nights name (`plans_named`: a negotiated
company rate never reaches a channel unmarked), `nights: [{date, sellable, rates: {rate_plan_id:
amount}}]` (rates only where they changed, else `{}`; amounts in canonical text, see
`amount_text`), with, on every night that carries rates, `prices: {rate_plan_id: {occupancy:
amount}}`: the night's price of one room for 1..max_occupancy guests as the quote prices it (the
rate plus the per-night part of the plan's packages, `OccupancyPricing`; a plan whose package is
priced in another currency, which the quote refuses, has none), each plan of `rate_plans` then
naming its `packages` (inclusions: code, calculation, price, currency) and `per_stay: {occupancy:
amount}` (the packages' part counted once per stay), so a stay's quote total is the sum of its
nights' `prices` plus `per_stay`; and, where restrictions changed (and in a full push), `restrictions: {rate_plan_id:
{closed, closed_to_arrival, closed_to_departure, min_stay_arrival, max_stay_arrival,
min_stay_through, max_stay_through}}` per night; where a rate plan's allotment or its rooms
sold on it changed (and in a full push), `allotments: {rate_plan_id: rooms left}`: the night's
every plan with an allotment (a plan left out has none and sells up to `sellable`; a consumer
replaces its map of the night with it; pms.services.inventory.allotments). `full: true` marks a
re-push.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from pms.db.current import current_unit_of_work
from pms.db.dialect import dialect_variant
from pms.db.fields import utcnow
from pms.db.scope import require_env
from pms.domain.availability import allotment_left, by_month, sellable_from_margin, sold_nights
from pms.domain.money import quantize
from pms.domain.pricing import OPEN, PackageLine, Rule, merge_rules, package_amount
from pms.models.ari import AriStream
from pms.models.catalog import RatePlan
from pms.models.platform import OutboxEvent, outbox_partition
from pms.models.property import RoomType
from pms.models.rates import RateSchedule
from pms.queries.allotments import Counts, allotment_counts, has_allotments, holds_of
from pms.queries.availability import (
    SELLABLE_OF_TYPE_PG,
    business_date_at,
    load_packages,
    load_restrictions,
    load_sellable_margins,
)

ARI_UPDATED = "hotel:pms:ari:updated"
ALL = "all"  # rate plans: every plan of the property


def amount_text(amount: Decimal | str) -> str:
    """The canonical text of an amount: plain decimal notation, no exponent, no trailing zeros
    after the point and no bare point ("120.00" -> "120", "99.50" -> "99.5")."""
    text = format(Decimal(str(amount)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text or "0"


def rule_data(rule: Rule) -> dict[str, Any]:
    """A merged restriction in the channels' names."""
    return {"closed": rule.closed, "closed_to_arrival": rule.closed_to_arrival,
            "closed_to_departure": rule.closed_to_departure,
            "min_stay_arrival": rule.min_los, "max_stay_arrival": rule.max_los,
            "min_stay_through": rule.min_stay_through,
            "max_stay_through": rule.max_stay_through}


@dataclass
class _Touched:
    property_id: uuid.UUID
    nights: set[date] = field(default_factory=set)
    rates: dict[date, set[uuid.UUID] | str] = field(default_factory=dict)
    restrictions: set[date] = field(default_factory=set)
    allotments: set[date] = field(default_factory=set)
    # rooms left per night and rate plan as the caller counted them under the nights' locks
    # (a booking, a release: the reservation's own row is written with the COMMIT)
    allotments_known: dict[date, dict[str, int]] = field(default_factory=dict)
    full: bool = False
    # the house's rooms changed on some of the nights (not a sale): what a channel holding
    # rooms may sell there can change with them
    capacity: set[date] = field(default_factory=set)
    # the nights' sellable as the booking's take counted it under its locks (pms_take_nights,
    # the reference rule's fast path): None once any touch came without them
    known: dict[date, int] | None = field(default_factory=dict)


@dataclass
class _Pending:
    by_room_type: dict[uuid.UUID, _Touched] = field(default_factory=dict)


_KEY = "ari_events"


@dataclass
class _TestHooks:
    """TEST-ONLY (tests/workers/test_ari_replay.py): a pause after a flush read its nights, and
    the control order (read, then lock the stream) that lets a concurrent change commit
    between the read and the version."""

    pause_after_read: Any = None
    read_before_lock: bool = False


TEST_HOOKS = _TestHooks()


def _pause() -> None:
    if TEST_HOOKS.pause_after_read is not None:
        TEST_HOOKS.pause_after_read()


def touch(property_id: uuid.UUID, room_type_id: uuid.UUID, nights: Iterable[date], *,
          rate_plans: Iterable[uuid.UUID] | str | None = None, restrictions: bool = False,
          full: bool = False, sellable: dict[date, int] | None = None,
          allotments: bool | dict[date, dict[uuid.UUID, int]] = False,
          capacity: bool = False) -> None:
    """Note that `nights` of a room type may sell differently (and, with `rate_plans`, that
    those plans' rates changed; with `restrictions`, that the restrictions did). Call inside
    the unit of work of the change; outside one it does nothing (no change commits there).
    `sellable`: the nights' rooms for sale as the caller counted them under the nights' locks
    (the booking's take), final for this transaction: the event then needs no recount.
    `allotments`: the rooms left on some rate plan's allotment changed on these nights (True:
    read them back; a dict: {night: {rate_plan_id: rooms left}} as the caller counted them
    under the nights' locks, final for those plans, later calls winning). `capacity`: the
    house's rooms changed on these nights (a sell limit, rooms out of order, rooms made or
    deleted), not a sale: at a property with allotments the event then carries what each
    channel holding rooms may still sell (a house left fewer rooms than the holds lowers it)."""
    uow = current_unit_of_work()
    if uow is None:
        return
    days = sold_nights(nights)  # the night-range rule (pms.domain.availability)
    if not days:
        return
    pending = getattr(uow, "_ari_pending", None)
    if pending is None:
        pending = uow._ari_pending = _Pending()
        uow.before_commit(_KEY, lambda: _flush(uow, pending))
    touched = pending.by_room_type.get(room_type_id)
    if touched is None:
        touched = pending.by_room_type[room_type_id] = _Touched(property_id)
    touched.nights.update(days)
    if sellable is None or touched.known is None:
        touched.known = None
    else:
        touched.known.update(sellable)
    touched.full = touched.full or full
    if restrictions:
        touched.restrictions.update(days)
    if capacity:
        touched.capacity.update(days)
    if allotments:
        touched.allotments.update(days)
    if isinstance(allotments, dict):
        for day, plans in allotments.items():
            touched.allotments_known.setdefault(day, {}).update(
                {str(plan): n for plan, n in plans.items()})
    if rate_plans is not None:
        for day in days:
            if rate_plans == ALL:
                touched.rates[day] = ALL
            else:
                have = touched.rates.get(day)
                if have != ALL:
                    touched.rates[day] = (have or set()) | set(rate_plans)


@dataclass(frozen=True)
class OccupancyPricing:
    """How the quote prices one rate plan for N guests (`pms.domain.pricing.price_nights`):
    each night's rate rounded to the plan's currency, plus each package's
    `package_amount(nights, persons)`. Every calculation is linear in the nights
    (stay + nights x nightly), so a package splits into a per-night part
    (`amount(1) - amount(0)`) carried in each night's price and a per-stay part (`amount(0)`)
    carried once: the domain function stays the one home of a package's price. Adults and
    children count alike (the quote prices persons)."""

    currency: str
    packages: tuple[PackageLine, ...]
    bookable: bool  # False: a package in another currency (the quote's package_currency_mismatch)

    def nightly(self, rate: Any, persons: int) -> Decimal:
        extra = sum((package_amount(p, nights=1, persons=persons)
                     - package_amount(p, nights=0, persons=persons) for p in self.packages),
                    Decimal(0))
        return quantize(Decimal(str(rate)), self.currency) + extra

    def per_stay(self, persons: int) -> Decimal:
        return sum((package_amount(p, nights=0, persons=persons) for p in self.packages),
                   Decimal(0))

    def packages_data(self) -> list[dict[str, str]]:
        return [{"code": p.code, "calculation": p.calculation, "price": amount_text(p.price),
                 "currency": p.currency} for p in self.packages]


def occupancy_pricing(property_id: uuid.UUID, plan_ids: Iterable[uuid.UUID | str]
                      ) -> dict[str, OccupancyPricing]:
    """Each plan's `OccupancyPricing` by its id text (the packages the quote finds: the plan's
    `package_codes` that exist, in their order). Call inside a scope."""
    wanted = [p if isinstance(p, uuid.UUID) else uuid.UUID(str(p)) for p in plan_ids]
    if not wanted:
        return {}
    rows = list(RatePlan.select(RatePlan.id, RatePlan.currency, RatePlan.package_codes)
                .where((RatePlan.property == property_id) & RatePlan.id.in_(wanted)).tuples())
    packages = load_packages(property_id) if any(codes for _, _, codes in rows) else {}
    out = {}
    for plan_id, currency, codes in rows:
        lines = tuple(packages[c] for c in (codes or []) if c in packages)
        out[str(plan_id)] = OccupancyPricing(
            currency=currency, packages=tuple(p for p in lines if p.currency == currency),
            bookable=all(p.currency == currency for p in lines))
    return out


def _max_occupancy(room_type_id: uuid.UUID) -> int:
    return int(RoomType.select(RoomType.max_occupancy)
               .where(RoomType.id == room_type_id).scalar() or 0)


def _bump(property_id: uuid.UUID, room_type_id: uuid.UUID, count: int) -> int:
    """Move the room type's stream `count` versions on (made on first use) under its row lock;
    returns the last version."""
    now = utcnow()
    query = (AriStream.insert(id=room_type_id, property=property_id, version=count,
                              created_at=now, updated_at=now)
             .on_conflict(conflict_target=AriStream.key_target(),
                          update={AriStream.version: AriStream.version + count,
                                  AriStream.updated_at: now})
             .returning(AriStream.version))
    rows = list(query.tuples().execute())
    return int(rows[0][0])


def night_states(property_id: uuid.UUID, room_type_id: uuid.UUID, days: list[date], *,
                 rates: dict[date, set[uuid.UUID] | str] | None = None,
                 restrictions: set[date] | None = None,
                 allotments: set[date] | None = None,
                 allotments_known: dict[date, dict[str, int]] | None = None,
                 now: Any = None) -> list[dict[str, Any]]:
    """The nights as an ARI consumer holds them (in date order): sellable by the search's own
    statement, the rates named in `rates` (date -> plans or ALL), the merged restrictions of
    every plan for the dates in `restrictions`, every plan's rooms left on its allotment for
    the dates in `allotments` (the search's own counts, pms.queries.allotments, where
    `allotments_known` does not give them) and, where some plan's allotment holds rooms for it
    (a release period not reached at the business date of `now`), what each such plan may sell
    (`channel_sellable`). Call inside a scope."""
    days = sorted(days)
    if not days:
        return []
    first, last = days[0], days[-1]
    count = (last - first).days + 1
    business_date = business_date_at(property_id, now)
    per_night, margins = load_sellable_margins(
        property_id, [room_type_id], first, count,
        business_date=business_date).get(room_type_id) or ([], [])
    amounts: dict[date, dict[str, str]] = defaultdict(dict)
    raw: dict[date, dict[str, Decimal]] = defaultdict(dict)
    if rates:
        wanted_all = any(v == ALL for v in rates.values())
        plans: set[uuid.UUID] = set()
        for v in rates.values():
            if v != ALL:
                plans |= v  # type: ignore[arg-type]
        query = (RateSchedule.select(RateSchedule.rate_plan, RateSchedule.date,
                                     RateSchedule.amount)
                 .where((RateSchedule.property == property_id)
                        & (RateSchedule.room_type == room_type_id)
                        & (RateSchedule.date >= first) & (RateSchedule.date <= last)))
        if not wanted_all:
            query = query.where(RateSchedule.rate_plan.in_(list(plans)))
        for plan_id, day, amount in query.tuples():
            plan_id = plan_id if isinstance(plan_id, uuid.UUID) else uuid.UUID(str(plan_id))
            day = date.fromisoformat(day) if isinstance(day, str) else day
            named = rates.get(day)
            if named == ALL or (named and plan_id in named):
                amounts[day][str(plan_id)] = amount_text(amount)
                raw[day][str(plan_id)] = amount
    pricing = occupancy_pricing(property_id, {p for per in raw.values() for p in per})
    guests = range(1, _max_occupancy(room_type_id) + 1) if pricing else range(0)
    rules: dict[date, dict[str, dict[str, Any]]] = {}
    if restrictions:
        plan_ids = {p for (p,) in RatePlan.select(RatePlan.id)
                    .where(RatePlan.property == property_id).tuples()}
        plan_ids = {p if isinstance(p, uuid.UUID) else uuid.UUID(str(p)) for p in plan_ids}
        loaded = load_restrictions(property_id, plan_ids, {room_type_id}, first, last)
        for day in restrictions:
            rows = loaded.get(day, [])
            rules[day] = {str(plan): rule_data(merge_rules(
                [r for p, _rt, r in rows if p is None or p == plan]) if rows else OPEN)
                for plan in sorted(plan_ids, key=str)}
    left: dict[date, dict[str, int]] = {}
    channel: dict[date, dict[str, int]] = {}
    if allotments:
        counts = allotment_counts(property_id, first, count, room_type_id=room_type_id)
        left = _allotments(counts, first)
        channel = _channel_sellable(counts, first, count, margins, business_date)
    out = []
    for day in days:
        i = (day - first).days
        night: dict[str, Any] = {"date": day.isoformat(),
                                 "sellable": int(per_night[i]) if i < len(per_night) else 0,
                                 "rates": dict(sorted(amounts.get(day, {}).items()))}
        if night["rates"]:
            night["prices"] = {
                plan: {str(n): amount_text(pricing[plan].nightly(amount, n)) for n in guests}
                for plan, amount in sorted(raw[day].items())
                if plan in pricing and pricing[plan].bookable}
        if day in rules:
            night["restrictions"] = rules[day]
        if allotments and day in allotments:
            night["allotments"] = dict(sorted(
                {**left.get(day, {}), **(allotments_known or {}).get(day, {})}.items()))
            night.update({"channel_sellable": dict(sorted(channel[day].items()))}
                         if channel.get(day) else {})
        out.append(night)
    return out


def _channel_sellable(counts: Counts, first: date, count: int, margins: list[int],
                      business_date: date) -> dict[date, dict[str, int]]:
    """What each plan whose allotment holds rooms may sell per night: the house's margin with
    its own hold added back, capped by its allotment's rooms left (which its hold equals)."""
    out: dict[date, dict[str, int]] = defaultdict(dict)
    for (plan, _rt), held in holds_of(counts, first, count, business_date).items():
        for i, n in enumerate(held):
            if n and i < len(margins):
                out[first + timedelta(days=i)][str(plan)] = min(
                    sellable_from_margin(margins[i] + n), n)
    return out


def _allotments(counts: Counts, first: date) -> dict[date, dict[str, int]]:
    """Rooms left per night on every rate plan with an allotment of the room type."""
    left: dict[date, dict[str, int]] = defaultdict(dict)
    for (plan, _rt), nights in counts.items():
        for i, (allotment, sold, _release) in nights.items():
            left[first + timedelta(days=i)][str(plan)] = allotment_left(allotment, sold) or 0
    return left


def _flush(uow: Any, pending: _Pending) -> None:
    """The events of everything touched in this unit of work (see the module docstring).

    On PostgreSQL a change of sellable nights only (a booking, an edit, a cancel, maintenance,
    a sell limit) costs no round trip: each month's event is ONE statement sent with the
    COMMIT (`_in_commit`) that bumps the stream and computes the nights with the search's
    statement. Rate and restriction changes and full pushes bump, then read, here."""
    for room_type_id in sorted(pending.by_room_type, key=str):
        touched = pending.by_room_type[room_type_id]
        months = by_month(touched.nights)
        if not months:
            continue
        if touched.capacity - touched.allotments and has_allotments(touched.property_id):
            # a change of the house's rooms (a sell limit, rooms out of order, a room made or
            # deleted) may leave it fewer rooms than a channel holds: what each channel may
            # sell then changes too (channel_sellable). A sale never lowers it (it takes only
            # what the house has beyond the holds); a cancel can only raise it again, which
            # the next change of those nights, push or digest shows.
            touched.allotments |= touched.capacity
        if (not touched.rates and not touched.restrictions and not touched.allotments
                and not touched.full
                and _sellable_in_commit(uow, room_type_id, touched, months)):
            continue
        if TEST_HOOKS.read_before_lock:  # TEST-ONLY control: the race the order prevents
            states = night_states(touched.property_id, room_type_id, sorted(touched.nights),
                                  rates=touched.rates, restrictions=touched.restrictions,
                                  allotments=touched.allotments,
                                  allotments_known=touched.allotments_known,
                                  now=uow.ctx.now)
            _pause()
            last = _bump(touched.property_id, room_type_id, len(months))
        else:
            last = _bump(touched.property_id, room_type_id, len(months))  # lock, then read
            states = night_states(touched.property_id, room_type_id, sorted(touched.nights),
                                  rates=touched.rates, restrictions=touched.restrictions,
                                  allotments=touched.allotments,
                                  allotments_known=touched.allotments_known,
                                  now=uow.ctx.now)
            _pause()
        by_day = {n["date"]: n for n in states}
        version = last - len(months)
        code = _room_type_code(room_type_id)
        for month in months:
            version += 1
            nights = [by_day[d.isoformat()] for d in month]
            data = {"property_id": str(touched.property_id), "room_type_id": str(room_type_id),
                    "room_type_code": code,
                    "rate_plans": plans_named(touched.property_id, nights,
                                              room_type_id=room_type_id),
                    "nights": nights}
            if touched.full:
                data["full"] = True
            _emit(uow, room_type_id, touched.property_id, version, data)
    pending.by_room_type.clear()


def _room_type_code(room_type_id: uuid.UUID) -> str | None:
    return RoomType.select(RoomType.code).where(RoomType.id == room_type_id).scalar()


def plans_named(property_id: uuid.UUID, nights: list[dict[str, Any]], *,
                room_type_id: uuid.UUID | None = None) -> dict[str, Any]:
    """What a channel needs to know of every rate plan the nights name (in their rates,
    restrictions or allotments): its code, currency and whether it is negotiated (a company's
    rate, never for a public channel) and active. A plan id never travels without it. A plan
    the nights price per occupancy (`prices`) also names its `packages` (inclusions) and
    `per_stay: {occupancy: amount}` (of the room type's 1..max_occupancy guests)."""
    named = sorted({plan for night in nights
                    for part in ("rates", "restrictions", "allotments")
                    for plan in night.get(part) or {}})
    if not named:
        return {}
    rows = (RatePlan.select(RatePlan.id, RatePlan.code, RatePlan.currency, RatePlan.negotiated,
                            RatePlan.active)
            .where((RatePlan.property == property_id)
                   & RatePlan.id.in_([uuid.UUID(p) for p in named])).tuples())
    out = {str(pid): {"code": code, "currency": currency, "negotiated": bool(negotiated),
                      "active": bool(active)}
           for pid, code, currency, negotiated, active in sorted(rows, key=lambda r: str(r[0]))}
    priced = sorted({plan for night in nights for plan in night.get("prices") or {}})
    if priced and room_type_id is not None:
        pricing = occupancy_pricing(property_id, priced)
        guests = range(1, _max_occupancy(room_type_id) + 1)
        for plan in priced:
            if plan in out and plan in pricing:
                out[plan]["packages"] = pricing[plan].packages_data()
                out[plan]["per_stay"] = {str(n): amount_text(pricing[plan].per_stay(n))
                                         for n in guests}
    return out


def _sellable_months_in_commit(uow: Any, room_type_id: uuid.UUID, touched: Any,
                               months: list[list[date]]) -> bool:
    """Each month's event as one statement queued with the unit of work's writes
    (`_in_commit`, PostgreSQL). True: the events are written."""
    for month in months:
        _in_commit(uow, room_type_id, touched.property_id, month, touched.known)
    return True


@dialect_variant(_sellable_months_in_commit)
def _sellable_in_commit(uow: Any, room_type_id: uuid.UUID, touched: Any,
                        months: list[list[date]]) -> bool:
    """The events of a change of sellable nights only, written without a round trip of
    their own where the database can (PostgreSQL); False elsewhere: the caller bumps the
    stream and reads the nights."""
    return False


def _emit(uow: Any, room_type_id: uuid.UUID, property_id: uuid.UUID, version: int,
          data: dict[str, Any]) -> None:
    subject = str(room_type_id)
    event = OutboxEvent.build(
        type=ARI_UPDATED, subject=subject, partition=outbox_partition(subject),
        aggregate_type="ari", aggregate_version=version, property_id=property_id,
        idempotency_key=f"{ARI_UPDATED}:{subject}:{version}", data=data,
        traceparent=uow.ctx.traceparent, request_id=uow.ctx.request_id, time=uow.ctx.now)
    uow.add(event)
    uow.events.append(event)


def _in_commit(uow: Any, room_type_id: uuid.UUID, property_id: uuid.UUID,
               days: list[date], known: dict[date, int] | None = None) -> None:
    """One month's event as one statement in the batch sent with the COMMIT (PostgreSQL):
    the stream's upsert (its row lock, the version), then the outbox row whose `data.nights`
    come from `SELLABLE_OF_TYPE_PG` (the search's statement for one room type) over the
    transaction's own writes, or, when the booking's take counted them (`known`), from those
    counts (PERF: a short statement the server plans cheaply). The Python event object (for
    the after-emit hooks) carries version 0: the version is the database's."""
    subject = str(room_type_id)
    # the room type's code is read by the statement itself (_CODE): no round trip of its own;
    # nights of sellable only name no rate plan
    base: dict[str, Any] = {"property_id": str(property_id), "room_type_id": subject,
                            "rate_plans": {}}
    if known is not None and all(d in known for d in days):
        base["nights"] = [{"date": d.isoformat(), "sellable": max(known[d], 0), "rates": {}}
                          for d in days]
    else:
        known = None
    event = OutboxEvent.build(
        type=ARI_UPDATED, subject=subject, partition=outbox_partition(subject),
        aggregate_type="ari", aggregate_version=0, property_id=property_id,
        idempotency_key="", data=base, traceparent=uow.ctx.traceparent,
        request_id=uow.ctx.request_id, time=uow.ctx.now)
    compiled = event.insert_statement()
    if compiled is None:  # (not PostgreSQL after all)
        raise RuntimeError("the ARI event needs PostgreSQL's compiled insert")
    sql, values = compiled
    env = require_env()
    first = days[0]
    count = (days[-1] - first).days + 1
    sellable = SELLABLE_OF_TYPE_PG.compiled()
    sellable_params = [] if known is not None else list(sellable.params(
        {"env": env, "property_id": property_id, "start": first, "count": count,
         "room_type": room_type_id, "business_date": None, "now": uow.ctx.now}))
    params: list[Any] = [room_type_id, env, property_id]
    if sql.startswith("SELECT ") and len(values) == 1:
        # the outbox's write function takes the row as one jsonb document (migration 030): the
        # version, its key and (without the take's counts) the nights are set over it in SQL
        call = sql[len("SELECT "):].partition("(")[0]
        # created_at is taken after the stream row's lock (clock_timestamp, per row of `v`), so
        # the relay's claim order (created_at) is the version order: a row built before a
        # concurrent booking's but committed after it (a higher version) would otherwise sort
        # first, and a claim whose batch ends between the two holds it back for a second
        # (pms.relay.claim: a later version waits for its aggregate's earlier ones)
        overrides = ["'aggregate_version', v.version", "'idempotency_key', %s || v.version",
                     "'created_at', clock_timestamp()"]
        params += [values[0], f"{ARI_UPDATED}:{subject}:"]
        if known is None:
            overrides.append(f"'data', ({_NIGHTS.format(sellable=sellable.sql)} || {_CODE})")
            params += [json.dumps(base), first, *sellable_params,
                       [(d - first).days for d in days], room_type_id]
        else:
            overrides.append(f"'data', (%s::jsonb || {_CODE})")
            params += [json.dumps(base), room_type_id]
        text = [_UPSERT, f"SELECT {call}(%s::jsonb || jsonb_build_object("
                         f"{', '.join(overrides)})) FROM v"]
        uow.write_sql(" ".join(text), params)
        uow.events.append(event)
        return
    columns = [f.column_name for f in OutboxEvent._meta.sorted_fields]
    if len(columns) != len(values):
        raise RuntimeError("unexpected outbox INSERT shape")
    exprs = []
    for column, value in zip(columns, values, strict=True):
        if column == "aggregate_version":
            exprs.append("v.version")
        elif column == "idempotency_key":
            exprs.append("%s || v.version")
            params.append(f"{ARI_UPDATED}:{subject}:")
        elif column == "created_at":  # after the stream's lock: version order (above)
            exprs.append("clock_timestamp()")
        elif column == "data" and known is not None:
            exprs.append(f"(%s::jsonb || {_CODE})")
            params.extend([value, room_type_id])
        elif column == "data":
            exprs.append(f"({_NIGHTS.format(sellable=sellable.sql)} || {_CODE})")
            params.extend([value, first, *sellable_params,
                           [(d - first).days for d in days], room_type_id])
        else:
            exprs.append("%s")
            params.append(value)
    if sql.startswith("SELECT "):  # the outbox's write function (migration 017), by position
        call = sql[len("SELECT "):].partition("(")[0]
        text = [_UPSERT, f'SELECT {call}({", ".join(exprs)}) FROM v']
    else:
        names = ", ".join(f'"{c}"' for c in columns)
        text = [_UPSERT, f'INSERT INTO "outbox_event" ({names}) SELECT {", ".join(exprs)} FROM v']
    uow.write_sql(" ".join(text), params)
    uow.events.append(event)


_UPSERT = ("WITH v AS (INSERT INTO ari_stream (id, created_at, updated_at, env_id, version, "
           "property_id) VALUES (%s, now(), now(), %s, 1, %s) ON CONFLICT (env_id, id) DO UPDATE SET "
           "version = ari_stream.version + 1, updated_at = now() RETURNING version)")
_NIGHTS = ("(%s::jsonb || jsonb_build_object('nights', (SELECT coalesce(jsonb_agg("
           "jsonb_build_object('date', to_char(%s::date + (u.i - 1)::int, 'YYYY-MM-DD'), "
           "'sellable', u.x, 'rates', '{{}}'::jsonb) ORDER BY u.i), '[]'::jsonb) "
           "FROM ({sellable}) s(rt, arr) CROSS JOIN LATERAL unnest(s.arr) WITH ORDINALITY "
           "AS u(x, i) WHERE (u.i - 1) = ANY(%s::int[]))))")
_CODE = "jsonb_build_object('room_type_code', (SELECT rt.code FROM room_type rt WHERE rt.id = %s))"
