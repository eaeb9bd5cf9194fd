"""Shapes shared by every family: list pages, list queries, money and code patterns."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Generic, TypeVar

import msgspec

from pms.domain.money import MONEY_PATTERN, SIGNED_MONEY_PATTERN

T = TypeVar("T")

Code = Annotated[str, msgspec.Meta(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                                   description="Short identifying code, unique within its parent")]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Text = Annotated[str, msgspec.Meta(max_length=4000)]
Currency = Annotated[str, msgspec.Meta(pattern=r"^[A-Z]{3}$", description="ISO 4217 code")]
# Money: read from the JSON string by pms.domain.money.parse_money (pms/schemas/money.py finds
# these fields by the "money" marker); the pattern documents the same form in the OpenAPI.
Amount = Annotated[Decimal, msgspec.Meta(
    description='Non-negative decimal string, e.g. "129.00" (never a JSON number); no more '
                "decimal places than the currency has",
    extra_json_schema={"pattern": MONEY_PATTERN}, extra={"money": "unsigned"})]
SignedAmount = Annotated[Decimal, msgspec.Meta(
    description='Decimal string, may be negative, e.g. "-12.50" (never a JSON number)',
    extra_json_schema={"pattern": SIGNED_MONEY_PATTERN}, extra={"money": "signed"})]
Email = Annotated[str, msgspec.Meta(max_length=254, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]
Phone = Annotated[str, msgspec.Meta(max_length=40, pattern=r"^[0-9 +().-]{3,40}$")]
Limit = Annotated[int, msgspec.Meta(ge=1, le=200)]
Cursor = Annotated[str, msgspec.Meta(max_length=512, description="Opaque cursor from next_cursor")]
RoomNumber = Annotated[str, msgspec.Meta(min_length=1, max_length=16, pattern=r"^[A-Za-z0-9-]+$")]


class Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base of every request body: unknown fields (env_id, id, status...) are refused."""


class Out(msgspec.Struct, kw_only=True):
    """Base of every response shape."""


class NightPriceOut(Out):
    """One night's price (a quote's, a reservation's): one schema wherever it is shown."""

    date: date
    amount: Decimal


class Page(msgspec.Struct, Generic[T]):
    data: list[T]
    next_cursor: str | None = None


class ListQuery(msgspec.Struct, kw_only=True):
    limit: Limit = 50
    cursor: Cursor | None = None


def to_data(out: Any) -> dict[str, Any]:
    """Builtins for a CloudEvent `data` / audit snapshot (Decimal and UUID become strings)."""
    return msgspec.to_builtins(out)
