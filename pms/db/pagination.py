"""Keyset (cursor) pagination: `{"data": [...], "next_cursor": "<opaque>" | null}`.

The cursor encodes the sort key of the last row returned, so pages stay stable while rows are
added, and the query uses the (env_id, created_at) style indexes instead of OFFSET scans.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

import peewee

from pms.errors import ValidationFailed

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


def encode_cursor(values: list[Any]) -> str:
    raw = json.dumps([v.isoformat() if isinstance(v, datetime) else str(v) for v in values])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _invalid_cursor() -> ValidationFailed:
    return ValidationFailed("cursor is not valid", code="invalid_cursor",
                            errors=[{"field": "cursor", "message": "not a cursor from this API"}])


def decode_cursor(cursor: str) -> list[str]:
    """The cursor's two strings, or 422 `invalid_cursor` for anything else (not base64, not
    JSON, not a list of two strings: a number, null or boolean inside is refused here)."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = json.loads(base64.urlsafe_b64decode(padded.encode()).decode())
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise _invalid_cursor() from exc
    if not isinstance(values, list) or len(values) != 2 or not all(
            isinstance(v, str) for v in values):
        raise _invalid_cursor()
    return values


def paginate(query: peewee.ModelSelect, model: type[peewee.Model], *, limit: int,
             cursor: str | None) -> Page[Any]:
    """Order by (created_at, id) ascending and return one page after `cursor`."""
    if cursor:
        created_raw, id_raw = decode_cursor(cursor)
        try:
            created = datetime.fromisoformat(created_raw)
            last_id = uuid.UUID(id_raw)
            created_db = model.created_at.db_value(created)  # (UTC: may overflow at year 1)
        except (ValueError, TypeError, OverflowError) as exc:
            raise _invalid_cursor() from exc
        query = query.where(
            (model.created_at > created_db)
            | ((model.created_at == created_db) & (model.id > last_id))
        )
    rows = list(query.order_by(model.created_at, model.id).limit(limit + 1))
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_cursor = encode_cursor([last.created_at, last.id])
    return Page(items=rows, next_cursor=next_cursor)
