"""One bound for every date a request carries: no date (or date-time, or YYYY-MM month) after
LAST_DATE, checked where bodies and query strings are decoded (pms.api.spec), so no use case
meets a date whose next day, month or tear-down overflows Python's calendar (9999-12-31).
A date beyond it answers 422 `date_out_of_range` naming the field (`rows[2].departure_date`)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import msgspec

from pms.domain.availability import LAST_SEARCH_DEPARTURE
from pms.errors import ValidationFailed

# The last date any request may name: the search's last departure (nothing is sold after it).
LAST_DATE = LAST_SEARCH_DEPARTURE
LAST_MONTH = LAST_DATE.strftime("%Y-%m")
# A YYYY-MM month no later than LAST_DATE's month (schemas' month patterns).
MONTH_PATTERN = r"^(?!9999)[0-9]{4}-(0[1-9]|1[0-2])$"

_MAX_DEPTH = 12


def _beyond(value: Any) -> bool:
    if isinstance(value, datetime):
        return value.date() > LAST_DATE
    return isinstance(value, date) and value > LAST_DATE


def _find(value: Any, path: str, depth: int) -> str | None:
    if depth > _MAX_DEPTH:
        return None
    if _beyond(value):
        return path or "body"
    if isinstance(value, msgspec.Struct):
        for name in value.__struct_fields__:
            found = _find(getattr(value, name), f"{path}.{_wire(value, name)}" if path
                          else _wire(value, name), depth + 1)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = _find(item, f"{path}[{i}]", depth + 1)
            if found is not None:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            found = _find(item, f"{path}.{key}" if path else str(key), depth + 1)
            if found is not None:
                return found
    return None


def _wire(struct: msgspec.Struct, name: str) -> str:
    encoded = getattr(type(struct), "__struct_encode_fields__", None)
    if encoded is None:
        return name
    return encoded[type(struct).__struct_fields__.index(name)]


def check_dates(value: Any) -> None:
    """Raise 422 date_out_of_range naming the first field whose date lies after LAST_DATE."""
    field = _find(value, "", 0)
    if field is not None:
        raise ValidationFailed(f"{field} must be on or before {LAST_DATE}",
                               code="date_out_of_range",
                               errors=[{"field": field,
                                        "message": f"must be on or before {LAST_DATE}"}])
