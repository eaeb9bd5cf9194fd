"""Calendar rows made ahead: every room type keeps its `inventory_day` rows for a horizon.

A booking locks, recounts and takes its nights in one statement, provided their rows exist; a
night without a row costs the booking one more round trip (create the rows, take again; issue
10). So the rows are made before a booking needs them, set-based, one statement each time:

- room type creation (`pms.services.catalog.catalog`) fills [business date, + horizon) in the same unit
  of work as the room type;
- the night audit's date roll (`pms.services.night_audit.end_of_day`) fills [new business date, + horizon),
  which in steady state adds the one night that entered the window (the rest are already
  there: ON CONFLICT DO NOTHING), and heals any room type that lacked rows;
- `pms-cli calendar fill` (`fill_property_calendars`) fills it for room types made before
  this existed (the upgrade path), or after the horizon was raised.

The horizon is `Settings.calendar_horizon_days` (PMS_CALENDAR_HORIZON_DAYS, 550 days by
default; the reasoning is beside its default in `pms.config`), which the entry point puts in
`pms.wiring`. Rows hold zeros (sold 0, no sell limit; physical/OOO/OOS are recounted whenever
a row is locked for a change). Not a domain change: nothing an API reader can tell apart from a
night without a row, so no event and no audit row. A night beyond the horizon still books: the
booking path keeps its fallback (`pms.services.inventory.inventory`).

A leaf of the services: it imports no other service (catalog, inventory and end-of-day import
it).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from pms import wiring
from pms.context import Ctx
from pms.db.database import db, write_begin_args
from pms.db.fields import utcnow
from pms.db.scope import tenant_scope
from pms.db.statements import Statement
from pms.domain.business_date import business_date
from pms.models.inventory import InventoryDay
from pms.models.property import Property, RoomType

_COLUMNS = ("id, created_at, updated_at, env_id, property_id, room_type_id, date, "
            "physical, ooo, oos, sold")

# PostgreSQL: the window's days from generate_series (integers added to the start date, so no
# timestamp or time-zone arithmetic), crossed with the property's room types (or one of them).
# The rows that exist are skipped by an anti-join over the window's rows (one index range scan
# and a hash): the night audit's fill of a full window costs a few ms, where letting ON CONFLICT
# find 5,500 existing rows one by one cost about 110 ms. ON CONFLICT stays for a concurrent fill
# or first booking.
_PG = """
INSERT INTO inventory_day ({columns})
SELECT gen_random_uuid(), %(now)s, %(now)s, %(env)s, rt.property_id, rt.id, %(start)s::date + g,
       0, 0, 0, 0
FROM room_type rt CROSS JOIN generate_series(0, %(days)s - 1) AS g
WHERE rt.env_id = %(env)s AND rt.property_id = %(property)s{one}
  AND NOT EXISTS (
    SELECT 1 FROM inventory_day x
    WHERE x.env_id = %(env)s AND x.property_id = %(property)s AND x.room_type_id = rt.id
      AND x.date = %(start)s::date + g
      AND x.date >= %(start)s::date AND x.date < %(start)s::date + %(days)s::int)
ON CONFLICT (env_id, room_type_id, date) DO NOTHING
"""
# SQLite: a recursive CTE counts the days (inside the INSERT: Python's sqlite3 reports the row
# count only for a statement that starts with INSERT); ids are random version-4 UUIDs as peewee
# stores them there (32 hex digits); dates are ISO text, as DateField stores them. Existing rows
# are skipped by a probe of the unique index before a row (and its id) is built. The WHERE
# clause also settles SQLite's INSERT ... SELECT ... ON CONFLICT parsing ambiguity.
_SQLITE = """
INSERT INTO inventory_day ({columns})
WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n + 1 < %(days)s)
SELECT lower(hex(randomblob(6)) || '4' || substr(hex(randomblob(2)), 2)
             || substr('89ab', 1 + abs(random()) %% 4, 1) || substr(hex(randomblob(2)), 2)
             || hex(randomblob(6))),
       %(now)s, %(now)s, %(env)s, rt.property_id, rt.id, date(%(start)s, '+' || g.n || ' days'),
       0, 0, 0, 0
FROM room_type rt, g
WHERE rt.env_id = %(env)s AND rt.property_id = %(property)s{one}
  AND NOT EXISTS (
    SELECT 1 FROM inventory_day x
    WHERE x.env_id = %(env)s AND x.room_type_id = rt.id
      AND x.date = date(%(start)s, '+' || g.n || ' days'))
ON CONFLICT (env_id, room_type_id, date) DO NOTHING
"""


def _texts(one: str) -> dict[str, str]:
    return {"postgres": _PG.format(columns=_COLUMNS, one=one),
            "sqlite": _SQLITE.format(columns=_COLUMNS, one=one)}


_FILL_PROPERTY = Statement.text("inventory_calendar.fill_property", **_texts(""))
_FILL_ROOM_TYPE = Statement.text("inventory_calendar.fill_room_type",
                                 **_texts(" AND rt.id = %(room_type)s"))


def horizon_days() -> int:
    """The process's horizon in days (`pms.wiring`, from PMS_CALENDAR_HORIZON_DAYS)."""
    return wiring.current().calendar_horizon_days


def fill(property_id: uuid.UUID, start: date, days: int, *,
         room_type_id: uuid.UUID | None = None) -> int:
    """Make the missing rows of [start, start + days) for the property's room types (or the one
    given, when it is the property's), in one statement; returns how many rows were made.

    Call inside an open write transaction in a tenant scope. Idempotent; a concurrent fill or
    first booking of the same night is ignored (ON CONFLICT DO NOTHING)."""
    if days <= 0:
        return 0
    now = InventoryDay.created_at.db_value(utcnow())
    values = {"now": now, "start": start.isoformat(), "days": days, "property": property_id}
    if room_type_id is None:
        cursor = _FILL_PROPERTY.run(**values)
    else:
        cursor = _FILL_ROOM_TYPE.run(**values, room_type=room_type_id)
    return max(cursor.rowcount, 0)


def fill_horizon(prop: Property, now: datetime, *, room_type_id: uuid.UUID | None = None,
                 days: int | None = None) -> int:
    """`fill` from the property's business date for the horizon (`days`, else the process's)."""
    return fill(prop.id, business_date(prop, now), horizon_days() if days is None else days,
                room_type_id=room_type_id)


@dataclass(frozen=True)
class Filled:
    """What `fill_property_calendars` did for one property."""

    property_id: uuid.UUID
    property_code: str
    room_types: int
    from_date: date
    to_date: date  # the last night of the window
    added: int


def fill_property_calendars(ctx: Ctx, property_id: uuid.UUID, *,
                            days: int | None = None) -> Filled:
    """Fill the horizon of every room type of a property in a short transaction of its own (the
    `pms-cli calendar fill` upgrade path). Idempotent: a second run adds nothing.

    Raises:
        LookupError: no such property in the env of `ctx`.
    """
    days = horizon_days() if days is None else days
    with tenant_scope(ctx.env_id), db.atomic(**write_begin_args()):
        prop = Property.get_or_none(Property.id == property_id)
        if prop is None:
            raise LookupError(f"no property {property_id}")
        start = business_date(prop, ctx.now)
        types = RoomType.select().where(RoomType.property == prop.id).count()
        added = fill(prop.id, start, days)
    return Filled(property_id=prop.id, property_code=prop.code, room_types=types,
                  from_date=start, to_date=start + timedelta(days=max(days, 1) - 1), added=added)
