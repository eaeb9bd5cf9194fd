"""Rate schedules, restrictions and promo codes: request and response shapes.

Date ranges are `from_date`..`to_date`, both inclusive (the last night is `to_date`); stays use
`arrival_date`/`departure_date`, whose nights end the night before departure.
"""

from __future__ import annotations

import uuid
from datetime import date
from decimal import Decimal
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pms.domain.money import quantize
from pms.schemas.common import Amount, Currency, NightPriceOut, Out, Strict, Text

Weekday = Annotated[int, msgspec.Meta(ge=1, le=7, description="ISO weekday: 1 Monday .. 7 Sunday")]
Los = Annotated[int, msgspec.Meta(ge=1, le=366)]
Persons = Annotated[int, msgspec.Meta(ge=0, le=50)]
Adults = Annotated[int, msgspec.Meta(ge=1, le=50)]
PromoText = Annotated[str, msgspec.Meta(min_length=1, max_length=32,
                                        pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$")]


class RateEntry(Strict):
    room_type_id: uuid.UUID
    from_date: date
    to_date: date
    amount: Amount
    weekdays: Annotated[list[Weekday], msgspec.Meta(max_length=7)] | None = None


class RatesIn(Strict):
    """Set the nightly amount of room types for date ranges (existing nights are replaced)."""

    rates: Annotated[list[RateEntry], msgspec.Meta(min_length=1, max_length=100)]
    currency: Currency | None = None


class RatesQuery(msgspec.Struct, kw_only=True):
    from_date: date
    to_date: date
    room_type_id: uuid.UUID | None = None


class RateOut(Out):
    room_type_id: uuid.UUID
    date: date
    amount: Decimal
    currency: str


class RatesOut(Out):
    rate_plan_id: uuid.UUID
    data: list[RateOut]
    next_cursor: str | None = None


class RatesWritten(Out):
    rate_plan_id: uuid.UUID
    currency: str
    nights_written: int


class RestrictionIn(Strict):
    """Set (replace) the restrictions of a date range; all flags off and no LOS clears them."""

    from_date: date
    to_date: date
    room_type_id: uuid.UUID | None = None
    rate_plan_id: uuid.UUID | None = None
    min_los: Los | None = None  # today's names of min_stay_arrival / max_stay_arrival
    max_los: Los | None = None
    # the channel managers' names. *_arrival: counted on the arrival date (min_los
    # and max_los, which keep working; both names given must agree); *_through: required of
    # every stay that spends one of these nights
    min_stay_arrival: Los | None = None
    max_stay_arrival: Los | None = None
    min_stay_through: Los | None = None
    max_stay_through: Los | None = None
    closed: bool = False
    closed_to_arrival: bool = False
    closed_to_departure: bool = False
    weekdays: Annotated[list[Weekday], msgspec.Meta(max_length=7)] | None = None


class RestrictionQuery(msgspec.Struct, kw_only=True):
    from_date: date
    to_date: date
    room_type_id: uuid.UUID | None = None


class RestrictionOut(Out):
    rate_plan_id: uuid.UUID | None
    room_type_id: uuid.UUID | None
    date: date
    min_los: int | None
    max_los: int | None
    closed: bool
    closed_to_arrival: bool
    closed_to_departure: bool
    min_stay_arrival: int | None = None
    max_stay_arrival: int | None = None
    min_stay_through: int | None = None
    max_stay_through: int | None = None


class RestrictionsOut(Out):
    data: list[RestrictionOut]
    next_cursor: str | None = None


class RestrictionsWritten(Out):
    rate_plan_id: uuid.UUID | None
    room_type_id: uuid.UUID | None
    from_date: date
    to_date: date
    dates_written: int
    cleared: bool


DiscountType = Literal["PERCENT", "FIXED"]


class PromoCodeIn(Strict):
    code: PromoText
    discount_type: DiscountType
    discount_value: Amount
    description: Text | None = None
    currency: Currency | None = None
    valid_from: date | None = None
    valid_to: date | None = None
    min_nights: Los | None = None
    rate_plan_ids: Annotated[list[uuid.UUID], msgspec.Meta(max_length=100)] = []
    active: bool = True


class PromoCodePatch(Strict):
    description: Text | None | UnsetType = UNSET
    discount_type: DiscountType | UnsetType = UNSET
    discount_value: Amount | UnsetType = UNSET
    currency: Currency | None | UnsetType = UNSET
    valid_from: date | None | UnsetType = UNSET
    valid_to: date | None | UnsetType = UNSET
    min_nights: Los | None | UnsetType = UNSET
    rate_plan_ids: Annotated[list[uuid.UUID], msgspec.Meta(max_length=100)] | UnsetType = UNSET
    active: bool | UnsetType = UNSET


class PromoCodeOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    code: str
    description: str | None
    discount_type: DiscountType
    discount_value: Decimal
    currency: str | None
    valid_from: date | None
    valid_to: date | None
    min_nights: int | None
    rate_plan_ids: list[uuid.UUID]
    active: bool


class PromoValidateIn(Strict):
    """Price a promo code for a stay; nothing is written."""

    code: PromoText
    arrival_date: date
    departure_date: date
    room_type_id: uuid.UUID
    rate_plan_id: uuid.UUID
    adults: Adults = 1
    children: Persons = 0


class ReasonOut(Out):
    code: str
    message: str
    date: date | None = None


class PromoValidationOut(Out):
    code: str
    valid: bool
    reasons: list[ReasonOut]
    currency: str
    nights: list[NightPriceOut]
    room_total: Decimal
    packages_total: Decimal
    discount_total: Decimal
    total: Decimal
    total_without_promo: Decimal
    bookable: bool


def rate_out(row: object) -> RateOut:
    return RateOut(room_type_id=row.room_type_id, date=row.date,
                   amount=quantize(row.amount, row.currency), currency=row.currency)


def restriction_out(row: object) -> RestrictionOut:
    return RestrictionOut(rate_plan_id=row.rate_plan_id, room_type_id=row.room_type_id,
                          date=row.date, min_los=row.min_los, max_los=row.max_los,
                          closed=row.closed, closed_to_arrival=row.closed_to_arrival,
                          closed_to_departure=row.closed_to_departure,
                          min_stay_arrival=row.min_los, max_stay_arrival=row.max_los,
                          min_stay_through=row.min_stay_through,
                          max_stay_through=row.max_stay_through)


def promo_code_out(row: object) -> PromoCodeOut:
    return PromoCodeOut(id=row.id, property_id=row.property_id, code=row.code,
                        description=row.description, discount_type=row.discount_type,
                        # a percentage renders with two decimals, an amount in its currency
                        discount_value=quantize(row.discount_value, row.currency or "XXX"),
                        currency=row.currency,
                        valid_from=row.valid_from, valid_to=row.valid_to,
                        min_nights=row.min_nights,
                        rate_plan_ids=[uuid.UUID(str(i)) for i in row.rate_plan_ids or []],
                        active=row.active)
