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
