"""Column types shared by the models and the migrations (keep them stable: migrations import
them by name)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal
from math import isfinite
from typing import Any

import msgspec
import peewee

from pms.db.database import db


def utcnow() -> datetime:
    return datetime.now(UTC)


class JsonField(peewee.Field):
    """JSON column: JSONB on PostgreSQL, JSON text on SQLite."""

    field_type = "JSON"

    def db_value(self, value: Any) -> Any:
        if value is None:
            return None
        if _encodes_alike(value):
            # PERF: msgspec's encoder, 5-10x faster than json.dumps, for documents
            # it writes as the same JSON values (sorted keys too; only the spacing, the
            # escaping of non-ASCII text and the exponent of a float's text differ)
            return _encode(value).decode()
        return json.dumps(value, sort_keys=True, default=_json_default)

    def python_value(self, value: Any) -> Any:
        if value is None or not isinstance(value, (str, bytes)):
            return value
        return json.loads(value)


_encode = msgspec.json.Encoder(order="sorted", decimal_format="string",
                               uuid_format="canonical").encode
# Types msgspec writes as json.dumps(..., default=_json_default) does: the JSON scalars, a
# Decimal and a UUID as str(), a date as isoformat(). Not a datetime (msgspec writes UTC as "Z",
# isoformat "+00:00"), not a subclass (an enum), not a float that is not finite (NaN).
_ALIKE = frozenset({str, int, bool, type(None), Decimal, uuid.UUID, date})


def _encodes_alike(value: Any) -> bool:
    """Whether `value` holds only dicts with str keys, lists, tuples, finite floats and _ALIKE."""
    try:
        return _alike(value)
    except RecursionError:
        return False


def _alike(value: Any) -> bool:
    kind = type(value)
    if kind is dict:
        # PERF: one loop over the items, no generator per dict (audit documents are walked on
        # every write: `any(...)` over the keys cost a call per key)
        for key, item in value.items():
            if type(key) is not str:
                return False
            kind = type(item)
            if kind in _ALIKE:
                continue
            if kind is float:
                if isfinite(item):
                    continue
                return False
            if not _alike(item):
                return False
        return True
    if kind is list or kind is tuple:
        for item in value:
            kind = type(item)
            if kind in _ALIKE:
                continue
            if kind is float:
                if isfinite(item):
                    continue
                return False
            if not _alike(item):
                return False
        return True
    return kind in _ALIKE or (kind is float and isfinite(value))


def _json_default(value: Any) -> Any:
    if isinstance(value, (uuid.UUID, Decimal)):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


class UtcDateTimeField(peewee.DateTimeField):
    """Timestamps stored as UTC; always returned timezone-aware."""

    field_type = "TIMESTAMPTZ"

    def db_value(self, value: Any) -> Any:
        if isinstance(value, datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=UTC)
            value = value.astimezone(UTC)
            if not isinstance(db.obj, peewee.PostgresqlDatabase):
                return value.strftime("%Y-%m-%d %H:%M:%S.%f+00:00")
        return value

    def python_value(self, value: Any) -> Any:
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        if isinstance(value, datetime) and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value


_CENTS = Decimal("0.01")


class MoneyField(peewee.DecimalField):
    """Money amounts: NUMERIC(14, 4); quantized per currency by `pms.domain.money`.

    Read back with the same scale on both databases: PostgreSQL returns NUMERIC(14, 4) as
    `Decimal("300.0000")`, SQLite's numeric affinity as the integer 300 (or a float), so
    `str(amount)` would show "300.0000" on one and "300" on the other. A value is returned at two
    places ("300.00") unless it carries more significant places (a three-decimal currency such
    as KWD, or a rate's fourth place), which are kept: the field does not know the currency, so
    it never rounds money away.
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_digits", 14)
        kwargs.setdefault("decimal_places", 4)
        kwargs.setdefault("auto_round", True)
        super().__init__(**kwargs)

    def python_value(self, value: Any) -> Any:
        if value is None:
            return None
        return money_scale(value if isinstance(value, Decimal) else Decimal(str(value)))


def money_scale(amount: Decimal) -> Decimal:
    """`amount` at two decimal places, or at the fewest places above two that keep it exact."""
    if not amount.is_finite():
        return amount
    cents = amount.quantize(_CENTS)
    if cents == amount:
        return cents
    return amount.quantize(Decimal(1).scaleb(min(amount.normalize().as_tuple().exponent, -2)))
