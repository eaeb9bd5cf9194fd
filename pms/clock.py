"""Injectable time: services read `ctx.now`; the app gets its clock from `create_app`."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Protocol
from zoneinfo import ZoneInfo


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock for tests: stays where it is put."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at

    def advance(self, **delta: float) -> None:
        from datetime import timedelta

        self.at = self.at + timedelta(**delta)


def local_today(now: datetime, tz_name: str) -> date:
    """The calendar date at the property for an instant."""
    return now.astimezone(ZoneInfo(tz_name)).date()
