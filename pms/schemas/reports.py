"""Report shapes: `GET .../reports/{name}` (arrivals, departures, in-house, occupancy-forecast,
manager, open-folios)."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

import msgspec

from pms.schemas.common import Out


class ReportQuery(msgspec.Struct, kw_only=True):
    business_date: date | None = None
    days: Annotated[int, msgspec.Meta(ge=1, le=366)] = 14


class ReportOut(Out):
    report: str
    property_id: str
    business_date: str
    count: int
    rows: list[dict[str, Any]]
