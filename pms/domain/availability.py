"""Inventory arithmetic (SPEC rule 6). Pure; no I/O.

Sellable = min(physical - OOO - OOS, sell limit) - sold - held by room blocks, never below zero
and never above physical - OOO - OOS, whatever the sell limit says. This is THE formula: the
search's SQL (pms.queries.availability), the booking's take (`pms_take_nights`, migration 034, and
the SQLite path of pms.services.inventory.inventory) and the blocks' checks compute it and are proven
equal to it (tests/services/test_availability_equivalence.py, test_room_block_inventory.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta

from pms.domain.states import ReservationStatus

# the last departure a search takes. The search reads its rates by calendar month (the
# month after the stay's last one included), and Python's dates end with 9999-12-31: a stay in
# December 9999 would need a month that does not exist. Nothing is sold in year 9999, so it is refused (422),
# and no ARI event speaks of a night after it (pms.services.distribution.ari_events).
LAST_SEARCH_DEPARTURE = date(9998, 12, 31)


# -- the night-range rule (one place for the search's month reads, the ARI events'
# months and the digest's): nights are sold before LAST_SEARCH_DEPARTURE and are grouped by
# calendar month.

def sold_nights(nights: Iterable[date]) -> list[date]:
    """The nights that can be sold at all (before LAST_SEARCH_DEPARTURE), sorted, once each."""
    return sorted({d for d in nights if d < LAST_SEARCH_DEPARTURE})


def month_start(day: date) -> date:
    return day.replace(day=1)


def next_month(month: date) -> date:
    """The first day of the month after `month`'s."""
    return (month.replace(day=28) + timedelta(days=4)).replace(day=1)


def month_days(month: date) -> list[date]:
    """Every night of `month`'s calendar month."""
    first = month_start(month)
    return [first + timedelta(days=i) for i in range((next_month(first) - first).days)]


def months_between(first: date, last: date) -> list[date]:
    """The first day of each calendar month from `first`'s to `last`'s (both included)."""
    out, month = [], month_start(first)
    while month <= last:
        out.append(month)
        month = next_month(month)
    return out


def by_month(nights: Iterable[date]) -> list[list[date]]:
    """The sellable nights (`sold_nights`) in calendar months, each month's in date order."""
    out: dict[date, list[date]] = defaultdict(list)
    for day in sold_nights(nights):
        out[month_start(day)].append(day)
    return [out[k] for k in sorted(out)]


# -- allotments: a cap of rooms sellable on one rate plan per room type and night,
# distinct from the room type's sell limit. `sold` is the rate plan's live reservations of the
# room type that spend the night (CONFIRMED, CHECKED_IN, CHECKED_OUT: a cancel or a no-show
# gives its nights back, an early check-out the nights after it).

ALLOTMENT_STATUSES = tuple(s.value for s in (ReservationStatus.CONFIRMED,
                                            ReservationStatus.CHECKED_IN,
                                            ReservationStatus.CHECKED_OUT))


def allotment_left(allotment: int | None, sold: int) -> int | None:
    """Rooms still sellable on the rate plan that night (None: the plan has no allotment and
    sells up to the room type's sellable; never negative)."""
    if allotment is None:
        return None
    return max(max(allotment, 0) - max(sold, 0), 0)


def plan_sellable(sellable: int, left: int | None) -> int:
    """Rooms of the type sellable on the rate plan: the room type's, capped by the allotment."""
    return sellable if left is None else min(sellable, left)


# -- allotments with a release period: the plan's unsold rooms of a night are HELD for it
# (refused to every other sale) while the night is more than `release_days` days after the
# business date; from then on they return to the house. A null release period: a cap only.
# Every other sale sees the room type's sellable minus every plan's hold; a sale on plan p sees
# it minus the other plans' holds (and stays capped by what p's allotment has left):
# `margin` below is capacity - sold - held by blocks - the holds that apply to the sale,
# unclamped, and `sellable_from_margin` clamps it. The search's SQL, `pms_take_nights`, the
# Python take and the ARI counts compute these (tests/services/test_rule_equivalence.py,
# tests/services/test_availability_sql.py).

def releases_after(night: date, release_days: int | None, business_date: date) -> bool:
    """Whether an allotment of `night` with `release_days` still holds on `business_date`."""
    return release_days is not None and (night - business_date).days > max(release_days, 0)


def channel_hold(allotment: int, sold: int, release_days: int | None, night: date,
                 business_date: date) -> int:
    """Rooms a plan's allotment holds for it on `night` (0: a cap only, or released)."""
    if not releases_after(night, release_days, business_date):
        return 0
    return allotment_left(allotment, sold) or 0


def sellable_from_margin(margin: int) -> int:
    """Rooms for sale from capacity - sold - held - the holds that apply (never negative)."""
    return max(margin, 0)


def usable(physical: int, ooo: int, oos: int) -> int:
    """Rooms that physically exist and are in service on a night (never negative)."""
    return max(physical - ooo - oos, 0)


def capacity(physical: int, ooo: int, oos: int, sell_limit: int | None) -> int:
    """The most that may be sold on a night: the sell limit can lower it, never raise it."""
    cap = usable(physical, ooo, oos)
    if sell_limit is not None:
        cap = min(cap, max(sell_limit, 0))
    return cap


def sellable(physical: int, ooo: int, oos: int, sell_limit: int | None, sold: int,
             held: int = 0) -> int:
    """Rooms still for sale on a night: capacity minus sold minus the rooms room blocks hold,
    clamped to [0, usable]."""
    return max(capacity(physical, ooo, oos, sell_limit) - max(sold, 0) - max(held, 0), 0)


@dataclass(frozen=True)
class NightCount:
    """One night of one room type, as stored or recounted."""

    physical: int
    ooo: int
    oos: int
    sell_limit: int | None
    sold: int
    held: int = 0

    @property
    def sellable(self) -> int:
        """Rooms for sale before the channels' holds (`sellable_beside`)."""
        return sellable(self.physical, self.ooo, self.oos, self.sell_limit, self.sold, self.held)

    def margin(self, holds: int = 0) -> int:
        """capacity - sold - held by blocks - `holds` (the channels' holds that apply to a
        sale), unclamped."""
        return (capacity(self.physical, self.ooo, self.oos, self.sell_limit)
                - max(self.sold, 0) - max(self.held, 0) - max(holds, 0))

    def sellable_beside(self, holds: int) -> int:
        """Rooms for sale to a sale that the channels' `holds` (of the other plans) apply to."""
        return sellable_from_margin(self.margin(holds))

    @property
    def capacity(self) -> int:
        return capacity(self.physical, self.ooo, self.oos, self.sell_limit)


def stay_sellable(nights: list[NightCount]) -> int:
    """Rooms sellable for every night of a stay (the minimum over its nights; 0 if none)."""
    return min((n.sellable for n in nights), default=0)
