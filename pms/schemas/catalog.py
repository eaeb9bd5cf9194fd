"""Properties, room types, rooms, rate plans, items and packages.

The property resource is spelled as SPEC spells it (camelCase: propertyCode, timezone,
currencyCode, languages, displayAddress, contacts); every other resource is snake_case.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pms.domain.money import quantize
from pms.domain.states import HkStatus, RoomStatus
from pms.schemas.common import (
    Amount,
    Code,
    Currency,
    Email,
    Name,
    Out,
    Phone,
    RoomNumber,
    Strict,
    Text,
)

Language = Annotated[str, msgspec.Meta(pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$", max_length=35)]
TimeZone = Annotated[str, msgspec.Meta(min_length=1, max_length=64, description="IANA time zone")]
CheckOutTime = Annotated[str, msgspec.Meta(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$",
                                           description="local HH:MM")]
ItemCategory = Literal["room", "tax", "F&B", "mini bar", "other"]
PackageCalculation = Literal["PER_STAY", "PER_NIGHT", "PER_PERSON", "PER_PERSON_PER_NIGHT"]
FeeType = Literal["NONE", "FIRST_NIGHT", "PERCENT", "FIXED"]


class Address(Strict, rename="camel"):
    line1: Annotated[str, msgspec.Meta(max_length=200)] | None = None
    line2: Annotated[str, msgspec.Meta(max_length=200)] | None = None
    city: Annotated[str, msgspec.Meta(max_length=120)] | None = None
    region: Annotated[str, msgspec.Meta(max_length=120)] | None = None
    postal_code: Annotated[str, msgspec.Meta(max_length=20)] | None = None
    country_code: Annotated[str, msgspec.Meta(pattern=r"^[A-Z]{2}$")] | None = None


class Contacts(Strict, rename="camel"):
    phone: Phone | None = None
    email: Email | None = None
    website: Annotated[str, msgspec.Meta(max_length=300)] | None = None


# future, not cancelled reservations one guest session may hold (0: guests book
# nothing), and how far ahead of the business date any arrival may be
GuestBookings = Annotated[int, msgspec.Meta(ge=0, le=1000)]
HorizonDays = Annotated[int, msgspec.Meta(ge=1, le=3660)]


class PropertyIn(Strict, rename="camel"):
    property_code: Code
    timezone: TimeZone
    currency_code: Currency
    name: Name | None = None
    languages: Annotated[list[Language], msgspec.Meta(max_length=20)] = []
    display_address: Address | None = None
    contacts: Contacts | None = None
    check_out_time: CheckOutTime = "11:00"
    max_guest_bookings: GuestBookings = 5
    booking_horizon_days: HorizonDays = 550


class PropertyPatch(Strict, rename="camel"):
    property_code: Code | UnsetType = UNSET
    timezone: TimeZone | UnsetType = UNSET
    currency_code: Currency | UnsetType = UNSET
    name: Name | UnsetType = UNSET
    languages: Annotated[list[Language], msgspec.Meta(max_length=20)] | UnsetType = UNSET
    display_address: Address | None | UnsetType = UNSET
    contacts: Contacts | None | UnsetType = UNSET
    check_out_time: CheckOutTime | UnsetType = UNSET
    max_guest_bookings: GuestBookings | UnsetType = UNSET
    booking_horizon_days: HorizonDays | UnsetType = UNSET


class PropertyOut(Out, rename="camel"):
    id: uuid.UUID
    property_code: str
    name: str
    timezone: str
    currency_code: str
    languages: list[str]
    display_address: Address | None
    contacts: Contacts | None
    business_date: date | None
    check_out_time: str
    created_at: datetime
    updated_at: datetime
    max_guest_bookings: int = 5
    booking_horizon_days: int = 550


class RoomTypeIn(Strict):
    code: Code
    name: Name
    description: Text | None = None
    max_occupancy: Annotated[int, msgspec.Meta(ge=1, le=20)] = 2
    sort_order: Annotated[int, msgspec.Meta(ge=0, le=10000)] = 0


class RoomTypePatch(Strict):
    code: Code | UnsetType = UNSET
    name: Name | UnsetType = UNSET
    description: Text | None | UnsetType = UNSET
    max_occupancy: Annotated[int, msgspec.Meta(ge=1, le=20)] | UnsetType = UNSET
    sort_order: Annotated[int, msgspec.Meta(ge=0, le=10000)] | UnsetType = UNSET


class RoomTypeOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    code: str
    name: str
    description: str | None
    max_occupancy: int
    sort_order: int
    room_count: int | None = None


class RoomIn(Strict):
    room_number: RoomNumber
    room_type_id: uuid.UUID
    floor: Annotated[str, msgspec.Meta(max_length=16)] | None = None


class RoomPatch(Strict):
    room_number: RoomNumber | UnsetType = UNSET
    room_type_id: uuid.UUID | UnsetType = UNSET
    floor: Annotated[str, msgspec.Meta(max_length=16)] | None | UnsetType = UNSET


class RoomOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    room_type_id: uuid.UUID
    room_number: str
    floor: str | None
    status: RoomStatus
    hk_status: HkStatus


class FeePolicy(Strict):
    fee_type: FeeType = "NONE"
    fee_value: Amount | None = None
    deadline_hours: Annotated[int, msgspec.Meta(ge=0, le=8760)] = 0


class RatePlanIn(Strict):
    code: Code
    name: Name
    description: Text | None = None
    negotiated: bool = False
    currency: Currency | None = None
    cancellation_policy: FeePolicy = msgspec.field(default_factory=FeePolicy)
    no_show_policy: FeePolicy = msgspec.field(default_factory=FeePolicy)
    package_codes: Annotated[list[Code], msgspec.Meta(max_length=50)] = []
    active: bool = True


class RatePlanPatch(Strict):
    code: Code | UnsetType = UNSET
    name: Name | UnsetType = UNSET
    description: Text | None | UnsetType = UNSET
    negotiated: bool | UnsetType = UNSET
    cancellation_policy: FeePolicy | UnsetType = UNSET
    no_show_policy: FeePolicy | UnsetType = UNSET
    package_codes: Annotated[list[Code], msgspec.Meta(max_length=50)] | UnsetType = UNSET
    active: bool | UnsetType = UNSET


class RatePlanOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    code: str
    name: str
    description: str | None
    negotiated: bool
    currency: str
    cancellation_policy: FeePolicy
    no_show_policy: FeePolicy
    package_codes: list[str]
    active: bool


class ItemIn(Strict):
    code: Code
    name: Name
    category: ItemCategory
    price: Amount
    currency: Currency | None = None


class ItemPatch(Strict):
    code: Code | UnsetType = UNSET
    name: Name | UnsetType = UNSET
    category: ItemCategory | UnsetType = UNSET
    price: Amount | UnsetType = UNSET


class ItemOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    code: str
    name: str
    category: ItemCategory
    price: Amount
    currency: str


class PackageIn(Strict):
    code: Code
    name: Name
    price: Amount
    description: Text | None = None
    currency: Currency | None = None
    calculation: PackageCalculation = "PER_STAY"
    category: ItemCategory = "other"


class PackagePatch(Strict):
    code: Code | UnsetType = UNSET
    name: Name | UnsetType = UNSET
    price: Amount | UnsetType = UNSET
    description: Text | None | UnsetType = UNSET
    calculation: PackageCalculation | UnsetType = UNSET
    category: ItemCategory | UnsetType = UNSET


class PackageOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    code: str
    name: str
    description: str | None
    price: Amount
    currency: str
    calculation: PackageCalculation
    category: ItemCategory


def _convert(value: object, typ: type) -> object:
    return msgspec.convert(value, typ) if value is not None else None


def property_out(p: object) -> PropertyOut:
    return PropertyOut(
        id=p.id, property_code=p.code, name=p.name, timezone=p.timezone,
        currency_code=p.currency_code, languages=list(p.languages or []),
        display_address=_convert(p.display_address, Address),
        contacts=_convert(p.contacts, Contacts), business_date=p.business_date,
        check_out_time=p.check_out_time or "11:00",
        created_at=p.created_at, updated_at=p.updated_at,
        max_guest_bookings=p.max_guest_bookings, booking_horizon_days=p.booking_horizon_days,
    )


def room_type_out(rt: object, *, room_count: int | None = None) -> RoomTypeOut:
    return RoomTypeOut(id=rt.id, property_id=rt.property_id, code=rt.code, name=rt.name,
                       description=rt.description, max_occupancy=rt.max_occupancy,
                       sort_order=rt.sort_order, room_count=room_count)


def room_out(r: object) -> RoomOut:
    return RoomOut(id=r.id, property_id=r.property_id, room_type_id=r.room_type_id,
                   room_number=r.room_number, floor=r.floor, status=r.status,
                   hk_status=r.hk_status)


def rate_plan_out(rp: object) -> RatePlanOut:
    return RatePlanOut(
        id=rp.id, property_id=rp.property_id, code=rp.code, name=rp.name,
        description=rp.description, negotiated=rp.negotiated, currency=rp.currency,
        cancellation_policy=msgspec.convert(rp.cancellation_policy or {}, FeePolicy),
        no_show_policy=msgspec.convert(rp.no_show_policy or {}, FeePolicy),
        package_codes=list(rp.package_codes or []), active=rp.active,
    )


def item_out(i: object) -> ItemOut:
    return ItemOut(id=i.id, property_id=i.property_id, code=i.code, name=i.name,
                   category=i.category, price=quantize(i.price, i.currency), currency=i.currency)


def package_out(p: object) -> PackageOut:
    return PackageOut(id=p.id, property_id=p.property_id, code=p.code, name=p.name,
                      description=p.description, price=quantize(p.price, p.currency),
                      currency=p.currency,
                      calculation=p.calculation, category=p.category)
