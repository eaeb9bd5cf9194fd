"""Stay arithmetic: the nights of a stay, in the property's local calendar. Pure; no I/O."""

from __future__ import annotations

from datetime import date, timedelta

from pms.errors import ValidationFailed

# A stay longer than this is refused (a typo such as a wrong year, not a hotel stay).
MAX_STAY_NIGHTS = 366


def stay_nights(arrival: date, departure: date) -> list[date]:
    """The nights of a stay: every date from arrival up to, not including, departure.

    Raises:
        ValidationFailed: departure is not after arrival, or the stay is over MAX_STAY_NIGHTS.
    """
    if departure <= arrival:
        raise ValidationFailed(
            "departure_date must be after arrival_date (a stay has at least one night)",
            code="invalid_stay_dates",
            errors=[{"field": "departure_date", "message": "must be after arrival_date"}])
    count = (departure - arrival).days
    if count > MAX_STAY_NIGHTS:
        raise ValidationFailed(
            f"a stay may have at most {MAX_STAY_NIGHTS} nights",
            code="invalid_stay_dates",
            errors=[{"field": "departure_date",
                     "message": f"at most {MAX_STAY_NIGHTS} nights after arrival_date"}])
    return [arrival + timedelta(days=i) for i in range(count)]


def date_range(start: date, end: date) -> list[date]:
    """Every date in [start, end); empty when end <= start."""
    return [start + timedelta(days=i) for i in range(max((end - start).days, 0))]


def date_span(from_date: date, to_date: date, *, weekdays: list[int] | None = None,
              max_days: int, prefix: str = "") -> list[date]:
    """Dates from_date..to_date inclusive (optionally only some ISO weekdays).

    Raises:
        ValidationFailed: to_date before from_date, or a span over max_days.
    """
    if to_date < from_date:
        raise ValidationFailed("to_date must not be before from_date",
                               errors=[{"field": f"{prefix}to_date", "message": "before from_date"}])
    days = (to_date - from_date).days + 1
    if days > max_days:
        raise ValidationFailed(f"a range covers at most {max_days} days",
                               errors=[{"field": f"{prefix}to_date",
                                        "message": f"at most {max_days} days after from_date"}])
    wanted = set(weekdays) if weekdays else None
    out = [from_date + timedelta(days=i) for i in range(days)]
    return [d for d in out if wanted is None or d.isoweekday() in wanted]
