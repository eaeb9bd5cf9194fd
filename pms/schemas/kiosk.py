"""Kiosk configuration."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Literal

import msgspec

from pms.schemas.cashiering import PaymentMethodId
from pms.schemas.common import Code, Out, Strict
from pms.schemas.folios import FolioOut

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


# -- lookup ---------------------------------------------------------------------------

LastName = Annotated[str, msgspec.Meta(min_length=1, max_length=120)]
Confirmation = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
KioskRoomNumber = Annotated[str, msgspec.Meta(min_length=1, max_length=16)]
KioskReason = Literal["room_not_ready", "already_checked_in", "balance_due", "company_billed"]


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
    confirmation_number: Annotated[str | None, msgspec.Meta(description=(
        "The booking's number; null when the stay was found by its room number (a name and "
        "a room number never learn the confirmation number)"))]
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
        "What the guest owes at a check-out now: the guest folio's balance_due (posted "
        "charges, the nights and taxes a check-out would post, less captured payments), "
        "less the company's share of a stay billed to a company"))]
    currency: str
    key_count: int
    reasons: Annotated[list[KioskReason], msgspec.Meta(description=(
        "Why the guest cannot proceed at the kiosk (shown only after a two-identifier "
        "match): room_not_ready, already_checked_in, balance_due (the guest owes what "
        "no pre-authorization covers: a card pays it at check-out), company_billed (billed "
        "to a company and the guest owes a part: the desk settles it). Extensible."))]
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


class KioskOwedOut(Out):
    """What the stay owes at a check-out now (the one rule check-out and the lookup share)."""

    currency: str
    balance_due: Decimal
    company_pays: Decimal
    guest_owes: Decimal
    pre_authorized: Annotated[Decimal, msgspec.Meta(description=(
        "The largest AUTHORIZED pre-authorization on the guest folio: captured at a kiosk "
        "check-out when it covers guest_owes"))]
    company_billed: bool


class KioskFolioOut(Out):
    folio: FolioOut
    owed: KioskOwedOut


class KioskCheckOutIn(Strict):
    """A kiosk check-out: what the guest owes is paid first (a pre-authorization that covers
    it is captured; else the card given here is charged)."""

    payment_method_id: PaymentMethodId | None = None


class KioskAddOnOut(Out):
    """An add-on the property offers at its kiosks (a catalog package of the kiosk config's
    add_on_package_codes)."""

    code: str
    name: str
    description: str | None
    category: str
    calculation: Annotated[str, msgspec.Meta(description=(
        "How the price applies to a stay: PER_STAY, PER_NIGHT, PER_PERSON, "
        "PER_PERSON_PER_NIGHT"))]
    price: Decimal
    currency: str


class KioskAddOnList(Out):
    data: list[KioskAddOnOut]


class KioskAddOnIn(Strict):
    package_code: Code


class KioskAddOnSoldOut(Out):
    add_on: KioskAddOnOut
    folio_id: uuid.UUID
    charge_id: uuid.UUID
    amount: Annotated[Decimal, msgspec.Meta(description=(
        "What was posted to the stay's guest folio: the price for the stay's nights and "
        "persons, by the add-on's calculation"))]
    currency: str
