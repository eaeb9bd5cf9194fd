"""Pricing a stay: nightly rates, restrictions, packages, promo codes, occupancy, sold-out nights.

Pure; no I/O. The availability search and `quote_stay` both call `price_stay` with data the
services batch-load, so a quote and a search offer can never disagree.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

import msgspec

from pms.domain.availability import plan_sellable
from pms.domain.money import quantize, zero


class NightPrice(msgspec.Struct, frozen=True):
    date: date
    amount: Decimal


class Reason(msgspec.Struct, frozen=True):
    """Why a plan does not apply (or why a promo code does not): a stable code and a message."""

    code: str
    message: str
    date: date | None = None


class Quote(msgspec.Struct, kw_only=True):
    nights: list[NightPrice]
    room_total: Decimal
    packages_total: Decimal
    discount_total: Decimal
    total: Decimal
    currency: str
    bookable: bool
    reasons: list[Reason]
    available: int | None = None
    promo_code: str | None = None


@dataclass(frozen=True)
class Rule:
    """The restrictions in force for one (rate plan, room type, date), merged."""

    closed: bool = False
    closed_to_arrival: bool = False
    closed_to_departure: bool = False
    min_los: int | None = None  # the channels' min_stay_arrival: counted on the arrival date
    max_los: int | None = None  # max_stay_arrival
    # required of every stay that spends this night (the channels' min/max stay
    # through; Booking.com's "minimum stay through")
    min_stay_through: int | None = None
    max_stay_through: int | None = None


OPEN = Rule()


def merge_rules(rules: Iterable[Rule]) -> Rule:
    """The strictest combination: any flag set wins, the largest minimum, the smallest maximum."""
    merged = OPEN
    for r in rules:
        merged = Rule(
            closed=merged.closed or r.closed,
            closed_to_arrival=merged.closed_to_arrival or r.closed_to_arrival,
            closed_to_departure=merged.closed_to_departure or r.closed_to_departure,
            min_los=_strictest(max, merged.min_los, r.min_los),
            max_los=_strictest(min, merged.max_los, r.max_los),
            min_stay_through=_strictest(max, merged.min_stay_through, r.min_stay_through),
            max_stay_through=_strictest(min, merged.max_stay_through, r.max_stay_through),
        )
    return merged


def _strictest(pick, a: int | None, b: int | None) -> int | None:  # noqa: ANN001
    if a is None:
        return b
    return a if b is None else pick(a, b)


@dataclass(frozen=True)
class PackageLine:
    code: str
    calculation: str  # PER_STAY, PER_NIGHT, PER_PERSON, PER_PERSON_PER_NIGHT
    price: Decimal
    currency: str


def package_amount(pkg: PackageLine, *, nights: int, persons: int) -> Decimal:
    """A package's price for a stay, by its calculation."""
    factor = {"PER_STAY": 1, "PER_NIGHT": nights, "PER_PERSON": persons,
              "PER_PERSON_PER_NIGHT": persons * nights}.get(pkg.calculation)
    if factor is None:
        raise ValueError(f"unknown package calculation {pkg.calculation!r}")
    return pkg.price * factor


@dataclass(frozen=True)
class Promo:
    code: str
    discount_type: str  # PERCENT or FIXED
    value: Decimal
    currency: str | None
    valid_from: date | None
    valid_to: date | None
    min_nights: int | None
    rate_plan_ids: frozenset[uuid.UUID]
    active: bool


def promo_problem(promo: Promo | None, code: str, *, arrival: date, nights: int,
                  rate_plan_id: uuid.UUID, currency: str) -> Reason | None:
    """Why `promo` cannot be used for this stay, or None when it can."""
    if promo is None or not promo.active:
        return Reason("promo_invalid", f"promo code {code} is not valid at this property")
    if promo.valid_from is not None and arrival < promo.valid_from:
        return Reason("promo_not_yet_valid", f"promo code {code} is valid from {promo.valid_from}")
    if promo.valid_to is not None and arrival > promo.valid_to:
        return Reason("promo_expired", f"promo code {code} was valid until {promo.valid_to}")
    if promo.min_nights is not None and nights < promo.min_nights:
        return Reason("promo_min_nights",
                      f"promo code {code} needs a stay of at least {promo.min_nights} nights")
    if promo.rate_plan_ids and rate_plan_id not in promo.rate_plan_ids:
        return Reason("promo_not_applicable", f"promo code {code} does not apply to this rate plan")
    if promo.discount_type == "FIXED" and promo.currency and promo.currency != currency:
        return Reason("promo_not_applicable",
                      f"promo code {code} is in {promo.currency}, the rate is in {currency}")
    return None


def promo_discount(promo: Promo, room_total: Decimal, currency: str) -> Decimal:
    """The discount on the room total (never more than the room total)."""
    if promo.discount_type == "PERCENT":
        amount = room_total * promo.value / Decimal(100)
    else:
        amount = promo.value
    return quantize(min(max(amount, Decimal(0)), room_total), currency)


def stay_reasons(nights: list[date], departure: date, rules: Mapping[date, Rule], *,
                 persons: int, max_occupancy: int, active: bool = True) -> list[Reason]:
    """Reasons that concern the stay as a whole: the plan, occupancy, arrival and departure
    restrictions and the length of stay (counted on the arrival date's rule)."""
    reasons: list[Reason] = []
    if not active:
        reasons.append(Reason("rate_plan_inactive", "the rate plan is not active"))
    if persons > max_occupancy:
        reasons.append(Reason("over_occupancy",
                              f"{persons} guests exceed the room type's maximum of {max_occupancy}"))
    if not nights:
        return reasons
    arrival, count = nights[0], len(nights)
    arrival_rule = rules.get(arrival, OPEN)
    if arrival_rule.closed_to_arrival:
        reasons.append(Reason("closed_to_arrival", "closed to arrival on this date", arrival))
    if rules.get(departure, OPEN).closed_to_departure:
        reasons.append(Reason("closed_to_departure", "closed to departure on this date", departure))
    if arrival_rule.min_los is not None and count < arrival_rule.min_los:
        reasons.append(Reason("min_los", f"a stay arriving on {arrival} needs at least "
                                         f"{arrival_rule.min_los} nights", arrival))
    if arrival_rule.max_los is not None and count > arrival_rule.max_los:
        reasons.append(Reason("max_los", f"a stay arriving on {arrival} may have at most "
                                         f"{arrival_rule.max_los} nights", arrival))
    # through-stay lengths, the first night that requires them is named
    through_min = through_max = None
    for night in nights:
        rule = rules.get(night)
        if rule is None:
            continue
        if (through_min is None and rule.min_stay_through is not None
                and count < rule.min_stay_through):
            through_min = Reason("min_stay_through", f"a stay through {night} needs at least "
                                                     f"{rule.min_stay_through} nights", night)
        if (through_max is None and rule.max_stay_through is not None
                and count > rule.max_stay_through):
            through_max = Reason("max_stay_through", f"a stay through {night} may have at most "
                                                     f"{rule.max_stay_through} nights", night)
    reasons.extend(r for r in (through_min, through_max) if r is not None)
    return reasons


class PriceMemo:
    """Work shared by every offer of one search: each distinct nightly amount
    rounded once per currency, and the priced nights of each distinct run of amounts built once
    (ten room types of one plan usually share their amounts)."""

    __slots__ = ("nights", "rounded", "runs")

    def __init__(self) -> None:
        self.nights: Sequence[date] | None = None  # the nights the runs were priced for
        self.rounded: dict[tuple[Decimal, str], Decimal] = {}
        # None for a run with a night without rate (priced night by night, with its reasons)
        self.runs: dict[tuple[str, tuple[Decimal | None, ...]],
                        tuple[list[NightPrice], Decimal] | None] = {}


def price_stay(*, nights: list[date], departure: date, currency: str,
               rates: Mapping[date, Decimal], rules: Mapping[date, Rule],
               adults: int, children: int, max_occupancy: int,
               packages: Iterable[PackageLine] = (),
               sellable: Mapping[date, int] | None = None,
               promo: Promo | None = None, promo_code: str | None = None,
               rate_plan_id: uuid.UUID | None = None, active: bool = True) -> Quote:
    """Price one room of one type under one rate plan for a stay, with every reason it fails.

    `rates` maps a night to its amount (a missing night has no rate); `rules` maps a date (the
    nights and the departure date) to its merged restrictions; `sellable` maps a night to the
    rooms still for sale. The quote is bookable only when no reason was found.
    """
    return price_nights(
        nights=nights, departure=departure, currency=currency,
        amounts=[rates.get(n) for n in nights], rules=rules, adults=adults, children=children,
        max_occupancy=max_occupancy, packages=packages,
        sellable=None if sellable is None else [sellable.get(n, 0) for n in nights],
        promo=promo, promo_code=promo_code, rate_plan_id=rate_plan_id, active=active)


def price_nights(*, nights: Sequence[date], departure: date, currency: str,
                 amounts: Sequence[Decimal | None], rules: Mapping[date, Rule],
                 adults: int, children: int, max_occupancy: int,
                 packages: Iterable[PackageLine] = (),
                 sellable: Sequence[int] | None = None,
                 promo: Promo | None = None, promo_code: str | None = None,
                 rate_plan_id: uuid.UUID | None = None, active: bool = True,
                 memo: PriceMemo | None = None,
                 allotment: Sequence[int | None] | None = None) -> Quote:
    """`price_stay` with the nightly facts as lists aligned with `nights` (index i is night i):
    `amounts[i]` the rate (None: no rate), `sellable[i]` the rooms for sale, `allotment[i]` the
    rooms left on the rate plan's allotment (None: none that night; a night with none
    left refuses the plan, `allotment_exhausted`, and caps `available`). `memo` shares the
    rounding and the priced nights between the offers of one search.
    """
    count = len(nights)
    persons = adults + children
    reasons = stay_reasons(list(nights), departure, rules, persons=persons,
                           max_occupancy=max_occupancy, active=active)
    memo = memo if memo is not None else PriceMemo()
    if memo.nights is not nights and memo.nights != nights:
        memo.nights, memo.runs = nights, {}  # a run's prices hold its dates
    available: int | None = None
    if sellable is not None:
        available = max(min(sellable, default=0), 0)
    if allotment is not None:
        for night, left in zip(nights, allotment, strict=True):
            if left is None:
                continue
            if available is not None:
                available = plan_sellable(available, left)
            if left <= 0:
                reasons.append(Reason("allotment_exhausted",
                                      "the rate plan's allotment is used up on this night",
                                      night))
    closed = bool(rules) and any(rule.closed for rule in rules.values())
    run = None
    if not closed and (sellable is None or available):
        run = _priced_run(memo, nights, amounts, currency)
    if run is not None:
        priced, room_total = list(run[0]), run[1]
    else:
        priced = _priced_with_reasons(memo, nights, amounts, rules, sellable, currency, reasons)
        room_total = sum((p.amount for p in priced), zero(currency))
    packages_total = zero(currency)
    for pkg in packages:
        if pkg.currency != currency:
            reasons.append(Reason("package_currency_mismatch",
                                  f"package {pkg.code} is priced in {pkg.currency}, not {currency}"))
            continue
        packages_total += quantize(package_amount(pkg, nights=count, persons=persons), currency)
    discount = zero(currency)
    if promo_code is not None:
        problem = promo_problem(promo, promo_code, arrival=nights[0], nights=count,
                                rate_plan_id=rate_plan_id or uuid.UUID(int=0), currency=currency)
        if problem is not None:
            reasons.append(problem)
        elif promo is not None:
            discount = promo_discount(promo, room_total, currency)
    return Quote(
        nights=priced, room_total=room_total, packages_total=packages_total,
        discount_total=discount, total=room_total + packages_total - discount,
        currency=currency, bookable=not reasons, reasons=reasons, available=available,
        promo_code=promo_code,
    )


def _priced_run(memo: PriceMemo, nights: Sequence[date], amounts: Sequence[Decimal | None],
                currency: str) -> tuple[list[NightPrice], Decimal] | None:
    """PERF: the common case has no per-night reason: price each run of amounts once per
    search. None when a night has no rate (then priced night by night, with its reasons)."""
    key = (currency, tuple(amounts))
    run = memo.runs.get(key)
    if run is None:
        # `is None`, not `None in`: comparing a Decimal with None goes through an abc check
        if any(amount is None for amount in amounts):
            memo.runs[key] = None
            return None
        priced = [NightPrice(night, _rounded(memo, amount, currency))
                  for night, amount in zip(nights, amounts, strict=True)]
        run = memo.runs[key] = (priced, sum((p.amount for p in priced), zero(currency)))
    return run


def _priced_with_reasons(memo: PriceMemo, nights: Sequence[date],
                         amounts: Sequence[Decimal | None], rules: Mapping[date, Rule],
                         sellable: Sequence[int] | None, currency: str,
                         reasons: list[Reason]) -> list[NightPrice]:
    """Night by night, appending each night's reasons in order (closed, no rate, sold out)."""
    priced = []
    for i, night in enumerate(nights):
        if rules and rules.get(night, OPEN).closed:
            reasons.append(Reason("closed", "the rate is closed on this night", night))
        amount = amounts[i]
        if amount is None:
            reasons.append(Reason("no_rate", "no rate is loaded for this night", night))
        else:
            priced.append(NightPrice(night, _rounded(memo, amount, currency)))
        if sellable is not None and max(sellable[i], 0) == 0:
            reasons.append(Reason("sold_out", "no room of this type is left on this night", night))
    return priced


def _rounded(memo: PriceMemo, amount: Decimal, currency: str) -> Decimal:
    key = (amount, currency)
    value = memo.rounded.get(key)
    if value is None:
        value = memo.rounded[key] = quantize(amount, currency)
    return value
