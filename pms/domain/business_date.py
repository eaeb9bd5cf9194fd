"""A property's business date: the day its books are on. The night audit sets it and moves it
on; until a first audit it is the property's local calendar date. Pure: the caller passes the
property row and the moment (`ctx.now`).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Protocol

from pms.clock import local_today


class HasBusinessDate(Protocol):
    """What the rule reads of a property (`pms.models.Property`)."""

    business_date: date | None
    timezone: str


def business_date(prop: HasBusinessDate, now: datetime) -> date:
    """The property's business date (set by the night audit), else its local calendar date."""
    return prop.business_date or local_today(now, prop.timezone)
