"""Room holds: which physical room serves which stay on which nights (`RoomStay`), and the
checks before a room is given to a stay (its type, out of order or out of service, held by
another stay). Helpers inside the caller's unit of work; no events of their own.

The services check first (a clear 409 on both backends) and PostgreSQL's exclusion constraint
backs the check up under concurrency. Used by booking edits (`reservations`), check-in and the
front-desk moves (`stays`), so it sits below all of them.
"""

from __future__ import annotations

import uuid
from datetime import date

import peewee

from pms.db.database import db
from pms.db.dialect import fast_path
from pms.db.locking import for_update, locking_enabled
from pms.db.statements import Statement
from pms.errors import RoomUnavailable, ValidationFailed
from pms.models import Reservation, Room, RoomStay
from pms.services.housekeeping.maintenance import room_blocked

# Housekeeping marks that take a room out of sale today (besides maintenance periods).
OUT_OF_ORDER_MARKS = frozenset({"OUT_OF_ORDER", "OUT_OF_SERVICE"})


def find_room(property_id: uuid.UUID, *, room_number: str | None = None,
              room_id: uuid.UUID | None = None, lock: bool = False) -> Room:
    """A room of the property by number or id. Raises ValidationFailed when unknown."""
    if room_number is None and room_id is None:
        raise ValidationFailed("room_number or room_id is required",
                               errors=[{"field": "room_number", "message": "required"}])
    query = Room.select().where(Room.property == property_id)
    query = query.where(Room.id == room_id) if room_id else query.where(
        Room.room_number == room_number)
    row = (for_update(query) if lock else query).first()
    if row is None:
        field = "room_id" if room_id else "room_number"
        raise ValidationFailed(f"no room {room_id or room_number} in this property",
                               code="unknown_room",
                               errors=[{"field": field, "message": "unknown room"}])
    return row


_ROOM = ("SELECT {columns} FROM room WHERE env_id = %(env)s AND id = %(id)s")
_LOCK_ROOM: dict[bool, Statement] = {}


def _lock_room_pg(room_id: uuid.UUID) -> Room | None:
    """`lock_room` by a compiled statement (PERF, no query building per request)."""
    locked = locking_enabled()  # off only in the TEST-ONLY control runs
    statement = _LOCK_ROOM.get(locked)
    if statement is None:
        columns = ", ".join(f.column_name for f in Room._meta.sorted_fields)
        statement = _LOCK_ROOM[locked] = Statement.text(
            f"room_holds.lock_room{'' if locked else '_unlocked'}",
            postgres=_ROOM.format(columns=columns) + (" FOR UPDATE" if locked else ""))
    found = statement.one(id=room_id)
    return None if found is None else Room.from_columns(found)


@fast_path(_lock_room_pg)
def lock_room(room_id: uuid.UUID) -> Room | None:
    """The room, read with its lock (inside a unit of work)."""
    return for_update(Room.select().where(Room.id == room_id)).first()




def out_of_order(room_id: uuid.UUID, start: date, end: date) -> bool:
    """Whether an active OOO/OOS maintenance period of the room touches the nights [start, end)
    (maintenance periods include their `to_date`, the last night out of service)."""
    return room_blocked(room_id, start, end) is not None


def overlapping_holds(room_id: uuid.UUID, start: date, end: date,
                      exclude: uuid.UUID | None = None) -> peewee.ModelSelect:
    query = RoomStay.select().where((RoomStay.room == room_id) & (RoomStay.start_date < end)
                                    & (RoomStay.end_date > start))
    if exclude is not None:
        query = query.where(RoomStay.reservation != exclude)
    return query


def check_room(row: Reservation, room: Room, start: date, end: date) -> None:
    """Refuse a room of another type, out of order, or held by another stay (409)."""
    if room.room_type_id != row.room_type_id:
        raise RoomUnavailable(f"room {room.room_number} is not of the booked room type",
                              code="room_type_mismatch", room_number=room.room_number)
    if room.hk_status in OUT_OF_ORDER_MARKS or out_of_order(room.id, start, end):
        raise RoomUnavailable(f"room {room.room_number} is out of order or out of service",
                              room_number=room.room_number)
    if overlapping_holds(room.id, start, end, exclude=row.id).exists():
        raise RoomUnavailable(f"room {room.room_number} is held by another stay on these nights",
                              room_number=room.room_number)


def hold_room(row: Reservation, room_id: uuid.UUID, start: date, end: date) -> None:
    """Insert the room hold [start, end) for the stay and point the reservation at the room."""
    if end > start:
        try:
            with db.atomic():
                RoomStay.create(reservation=row.id, property=row.property_id, room=room_id,
                                start_date=start, end_date=end)
        except peewee.IntegrityError as exc:  # the exclusion constraint (PostgreSQL)
            raise RoomUnavailable("the room is held by another stay on these nights") from exc
    row.room = room_id


def release_room_holds(row: Reservation) -> None:
    RoomStay.delete().where(RoomStay.reservation == row.id).execute()
