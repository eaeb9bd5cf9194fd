"""Request and response bodies of a guest's consents."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from enum import StrEnum
from typing import Annotated, Literal

import msgspec

from pms.schemas.common import ListQuery, Out, Strict


class Purpose(StrEnum):
    MARKETING_EMAIL = "MARKETING_EMAIL"
    MARKETING_SMS = "MARKETING_SMS"
    MARKETING_PHONE = "MARKETING_PHONE"
    MARKETING_POST = "MARKETING_POST"
    PROFILING = "PROFILING"
    THIRD_PARTY_SHARING = "THIRD_PARTY_SHARING"


class Source(StrEnum):
    DESK = "DESK"
    KIOSK = "KIOSK"
    BOOKING_FUNNEL = "BOOKING_FUNNEL"
    CHANNEL = "CHANNEL"
    GUEST_PORTAL = "GUEST_PORTAL"


TextVersion = Annotated[str, msgspec.Meta(min_length=1, max_length=64,
                                          pattern=r"^[A-Za-z0-9._:-]+$")]


class ConsentIn(Strict):
    """A grant (`granted: true`) or a withdrawal (`false`) of one purpose, with the version of
    the consent text the guest was shown."""

    purpose: Purpose
    granted: bool
    source: Source
    text_version: TextVersion


class ConsentQuery(ListQuery):
    purpose: Purpose | None = None


class ConsentOut(Out):
    id: uuid.UUID
    profile_id: uuid.UUID
    purpose: str
    granted: bool
    source: str
    text_version: str
    recorded_at: datetime
    recorded_by: str


class CurrentConsentOut(Out):
    """A profile's standing consent per purpose (the newest record of each); a purpose never
    recorded is absent (not granted)."""

    profile_id: uuid.UUID
    consents: list[ConsentOut]
    granted: list[str]


class ExportQuery(Strict):
    """`zip` (the default): the archive, manifest.json and one JSON file per kind; `json`: the
    same manifest and rows as one JSON document."""

    format: Literal["zip", "json"] = "zip"


class ErasureIn(Strict):
    """`dry_run: true` answers what would change, what is held and what stands in the way,
    and changes nothing."""

    dry_run: bool = False


class HeldOut(Out):
    """A record kept as it is, until when, and why."""

    kind: str
    id: uuid.UUID
    until: datetime
    reason: str


class BlockerOut(Out):
    """What stands in the way of erasure now (an open stay, a balance due)."""

    kind: str
    id: uuid.UUID
    reason: str


class ErasureOut(Out):
    profile_id: uuid.UUID
    dry_run: bool
    erased: bool
    pseudonym: str
    changes: dict[str, int]
    held: list[HeldOut]
    blockers: list[BlockerOut]


AccessWhat = Literal["profile", "personal_data", "export"]


class AccessQuery(ListQuery):
    actor_sub: Annotated[str, msgspec.Meta(min_length=1, max_length=255, description=(
        "Only this reader's accesses (a token's subject)"))] | None = None
    what: AccessWhat | None = None


class AccessOut(Out):
    """Who read the person's data, what and on which day: `reads` times between `first_at` and
    `last_at`."""

    id: uuid.UUID
    profile_id: uuid.UUID
    actor_sub: str
    actor_kind: str
    what: AccessWhat
    day: date
    reads: int
    first_at: datetime
    last_at: datetime
