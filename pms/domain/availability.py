"""Inventory arithmetic (SPEC rule 6). Pure; no I/O.

Sellable = min(physical - OOO - OOS, sell limit) - sold - held by room blocks, never below zero
and never above physical - OOO - OOS, whatever the sell limit says. This is THE formula: the
search's SQL (pms.queries.availability), the booking's take (`pms_take_nights`, migration 034, and
the SQLite path of pms.services.inventory.inventory) and the blocks' checks compute it and are proven
equal to it (tests/services/test_availability_equivalence.py, test_room_block_inventory.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

# Issue 28: the last departure a search takes. The search reads its rates by calendar month (the
# month after the stay's last one included), and Python's dates end with 9999-12-31: a stay in
# December 9999 was a 500 on PostgreSQL. Nothing is sold in year 9999, so it is refused (422),
# and no ARI event speaks of a night after it (pms.services.distribution.ari_events).
LAST_SEARCH_DEPARTURE = date(9998, 12, 31)


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
        return sellable(self.physical, self.ooo, self.oos, self.sell_limit, self.sold, self.held)

    @property
    def capacity(self) -> int:
        return capacity(self.physical, self.ooo, self.oos, self.sell_limit)


def stay_sellable(nights: list[NightCount]) -> int:
    """Rooms sellable for every night of a stay (the minimum over its nights; 0 if none)."""
    return min((n.sellable for n in nights), default=0)
