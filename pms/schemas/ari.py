"""Distribution: the ARI digest and the re-push job's body."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Annotated, Literal

import msgspec

from pms.schemas.common import Out, Strict
from pms.schemas.date_bounds import LAST_MONTH, MONTH_PATTERN

Month = Annotated[str, msgspec.Meta(pattern=MONTH_PATTERN, min_length=7, max_length=7,
                                    description=f"a calendar month, YYYY-MM, no later than "
                                                f"{LAST_MONTH}")]


class AriDigestQuery(msgspec.Struct, kw_only=True):
    """Months from..to (YYYY-MM); by default the full push's 365 nights from the business
    date; only `from`: that month and the 11 after."""

    from_: Month | None = msgspec.field(default=None, name="from")
    to: Month | None = None


class AriMonthDigestOut(Out):
    room_type_id: uuid.UUID
    month: str
    from_date: dt.date  # the first night hashed (the business date in its month)
    to_date: dt.date  # the last night hashed (the full push's last in its month)
    nights: int
    hash: str
    # the month's prices per occupancy and its plans' packages (docs/guides/distribution.md)
    prices_hash: str


class AriDigestOut(Out):
    property_id: uuid.UUID
    from_: str = msgspec.field(name="from")
    to: str
    algorithm: Literal["sha256"]
    data: list[AriMonthDigestOut]


class AriPushIn(Strict):
    """The months to push again (YYYY-MM); left out: 365 days from the business date."""

    months: Annotated[list[Month], msgspec.Meta(min_length=1, max_length=18)] | None = None
