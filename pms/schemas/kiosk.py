"""Kiosk configuration (issue 29)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec

from pms.schemas.common import Code, Out, Strict

KioskMode = Literal["CHECK_IN", "CHECK_OUT", "COLLECT_KEY", "WALK_IN"]
MAX_KEYS_LIMIT = 10


class KioskConfigIn(Strict):
    """The whole configuration (PUT replaces it)."""

    enabled_modes: Annotated[list[KioskMode], msgspec.Meta(max_length=4)]
    add_on_package_codes: Annotated[list[Code], msgspec.Meta(max_length=50)]
    lockdown: bool
    max_keys_per_stay: Annotated[int, msgspec.Meta(ge=1, le=MAX_KEYS_LIMIT)]


class KioskConfigOut(Out):
    property_id: uuid.UUID
    enabled_modes: list[str]
    add_on_package_codes: list[str]
    lockdown: bool
    max_keys_per_stay: int
    configured: bool
    updated_at: datetime | None
