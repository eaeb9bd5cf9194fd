"""Stay feedback and guest payment-method references."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

import msgspec

from pms.schemas.cashiering import PaymentMethodId
from pms.schemas.common import ListQuery, Out, Strict

Rating = Annotated[int, msgspec.Meta(ge=1, le=5)]
Comment = Annotated[str, msgspec.Meta(max_length=2000)]


class FeedbackIn(Strict):
    reservation_id: uuid.UUID
    rating: Rating
    comment: Comment | None = None


class FeedbackQuery(ListQuery):
    reservation_id: uuid.UUID | None = None


class FeedbackOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    reservation_id: uuid.UUID
    rating: int
    comment: str | None
    created_at: datetime
    updated_at: datetime


Brand = Annotated[str, msgspec.Meta(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9 _-]+$")]
LastFour = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{4}$")]


class PaymentMethodIn(Strict):
    """A reference to a payments-service token, with what the payments service reports of it
    (never a card number: the token's id, brand, last four digits and expiry only)."""

    payment_method_id: PaymentMethodId
    brand: Brand | None = None
    last4: LastFour | None = None
    exp_month: Annotated[int, msgspec.Meta(ge=1, le=12)] | None = None
    exp_year: Annotated[int, msgspec.Meta(ge=2000, le=2100)] | None = None


class PaymentMethodOut(Out):
    id: uuid.UUID
    profile_id: uuid.UUID
    payment_method_id: str
    brand: str | None
    last4: str | None
    exp_month: int | None
    exp_year: int | None
    created_at: datetime


class PaymentMethodQuery(Strict):
    """Which reference DELETE forgets: the payments-service token id."""

    payment_method_id: PaymentMethodId
