"""Distribution (issue 35): the ARI digest and the re-push job's body."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

import msgspec

from pms.schemas.common import Out, Strict

Month = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{4}-[0-9]{2}$", min_length=7, max_length=7,
                                    description="a calendar month, YYYY-MM")]


class AriDigestQuery(msgspec.Struct, kw_only=True):
    """Months from..to (YYYY-MM); by default the business date's month and the 11 after."""

    from_: Month | None = msgspec.field(default=None, name="from")
    to: Month | None = None


class AriMonthDigestOut(Out):
    room_type_id: uuid.UUID
    month: str
    nights: int
    hash: str


class AriDigestOut(Out):
    property_id: uuid.UUID
    from_: str = msgspec.field(name="from")
    to: str
    algorithm: Literal["sha256"]
    data: list[AriMonthDigestOut]


class AriPushIn(Strict):
    """The months to push again (YYYY-MM); left out: 365 days from the business date."""

    months: Annotated[list[Month], msgspec.Meta(min_length=1, max_length=18)] | None = None
