"""Kiosk configuration (issue 29)."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal
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


# -- lookup (issue 30) ---------------------------------------------------------------------------

LastName = Annotated[str, msgspec.Meta(min_length=1, max_length=120)]
Confirmation = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
KioskRoomNumber = Annotated[str, msgspec.Meta(min_length=1, max_length=16)]
KioskReason = Literal["room_not_ready", "already_checked_in", "balance_due"]


class KioskLookupIn(Strict):
    """Two identifiers (SPEC Limits 4): last_name plus exactly one of confirmation_number and
    room_number (the room finds in-house stays only)."""

    last_name: LastName
    confirmation_number: Confirmation | None = None
    room_number: KioskRoomNumber | None = None


class KioskReservationOut(Out):
    """Only what a kiosk needs of the matched stay."""

    id: uuid.UUID
    property_id: uuid.UUID
    confirmation_number: str
    status: str
    arrival_date: date
    departure_date: date
    adults: int
    children: int
    guest_first_name: str | None
    guest_last_name: str | None
    room_type_id: uuid.UUID
    room_type_name: str
    room_number: str | None
    balance: Annotated[Decimal, msgspec.Meta(description=(
        "The posted balance of the stay's folios (charges minus captured payments)"))]
    currency: str
    key_count: int
    reasons: Annotated[list[KioskReason], msgspec.Meta(description=(
        "Why the guest cannot proceed at the kiosk (shown only after a two-identifier "
        "match): room_not_ready, already_checked_in, balance_due. Extensible."))]
    actions: Annotated[list[str], msgspec.Meta(description=(
        "The kiosk modes this stay can use now (CHECK_IN, COLLECT_KEY, CHECK_OUT), among the "
        "enabled ones"))]


class KioskLookupOut(Out):
    reservation: KioskReservationOut
    kiosk_session: Annotated[str, msgspec.Meta(description=(
        "Send as X-Kiosk-Session on check-in, key issue and check-out of this reservation, "
        "from this terminal only"))]
    idle_timeout_seconds: int
    expires_at: datetime
