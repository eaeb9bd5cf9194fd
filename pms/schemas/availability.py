"""Availability searches: request bodies, query parameters and offers.

One shape for the three searches (property, env-wide, corporate): per room type, the rooms still
for sale for the whole stay and one offer per rate plan with nightly prices and totals, or the
reasons it does not apply (restriction broken, no rate, sold out, over occupancy).
"""

from __future__ import annotations

import uuid
from datetime import date
from decimal import Decimal
from typing import Annotated

import msgspec

from pms.domain.pricing import NightPrice, Reason
from pms.schemas.common import Out, Strict
from pms.schemas.rates import Adults, Persons, PromoText


class AvailabilityIn(Strict):
    arrival_date: date
    departure_date: date
    adults: Adults = 1
    children: Persons = 0
    room_type_id: uuid.UUID | None = None
    rate_plan_ids: Annotated[list[uuid.UUID], msgspec.Meta(max_length=50)] | None = None
    promo_code: PromoText | None = None
    include_unavailable: bool = True


class CorporateAvailabilityIn(AvailabilityIn):
    company_profile_id: uuid.UUID | None = None


class AvailabilityQuery(msgspec.Struct, kw_only=True):
    arrival_date: date
    departure_date: date
    adults: Adults = 1
    children: Persons = 0
    property_id: uuid.UUID | None = None
    promo_code: PromoText | None = None
    include_unavailable: bool = False


class OfferOut(Out):
    rate_plan_id: uuid.UUID
    rate_plan_code: str
    rate_plan_name: str
    negotiated: bool
    bookable: bool
    available: int
    currency: str
    nights: list[NightPrice]
    room_total: Decimal
    packages_total: Decimal
    discount_total: Decimal
    total: Decimal
    reasons: list[Reason]


class RoomTypeAvailabilityOut(Out):
    room_type_id: uuid.UUID
    code: str
    name: str
    max_occupancy: int
    available: int
    offers: list[OfferOut]


class AvailabilityOut(Out):
    property_id: uuid.UUID
    property_code: str
    arrival_date: date
    departure_date: date
    nights: int
    adults: int
    children: int
    room_types: list[RoomTypeAvailabilityOut]
    company_profile_id: uuid.UUID | None = None


class EnvAvailabilityOut(Out):
    data: list[AvailabilityOut]
    next_cursor: str | None = None
