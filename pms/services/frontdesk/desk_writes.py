"""The front desk's writes: check-in's room pick and occupation and check-out's vacating, each
as a reference beside its PostgreSQL fast path (`pms.db.dialect.fast_path`: same arguments,
same answer). The use cases (`checkin`, `checkout`) call these and never choose a dialect.

SPEC rule 5 (an occupied room has an OPEN folio) is written here: `occupy_room` occupies the
room, holds it for the stay and opens (or renames) the guest folio in one unit of work;
`tests/services/test_checkin_write_equivalence.py` proves the two paths write the same rows.
"""

from __future__ import annotations

import functools
import uuid
from datetime import date
from typing import Any

from pms import wiring
from pms.db.dialect import fast_path
from pms.db.fields import utcnow
from pms.db.statements import Statement
from pms.domain.states import FOLIO_INITIAL
from pms.errors import RoomUnavailable
from pms.models import Reservation, Room
from pms.services.cashiering.folios import block_routing, open_folio
from pms.services.reservations.room_holds import (
    OUT_OF_ORDER_MARKS,
    hold_room,
    release_room_holds,
)
from pms.services.reservations.stays import auto_assign

# -- PostgreSQL: the room picked in one round trip; held, occupied, its folio opened at COMMIT --

# The pick is the PL/pgSQL function `pms_pick_room` (migration 018: the vacant rooms of the
# type in the pick's order, walked until one passes its checks and is locked; its plans kept per
# connection). It returns room rows; the columns are named here in the model's order.
@functools.cache
def _pick_statement() -> Statement:
    columns = ", ".join(f.column_name for f in Room._meta.sorted_fields)
    return Statement.text("checkin.pick_room", postgres=(
        f"SELECT {columns} FROM pms_pick_room(%(env)s, %(prop)s, %(type)s, %(stay)s, "
        "%(start)s, %(end)s, %(out_of_order)s, %(lock)s)"))

# the stay's holds released, the room occupied, its hold taken; queued: the use case checked
# the room under its lock (no other stay's hold on the nights), and an overlap all the same
# breaks the exclusion constraint where the batch is sent: 409, nothing written
OCCUPY = Statement.text("checkin.occupy", postgres="""
DELETE FROM room_stay WHERE env_id = %(env)s AND reservation_id = %(stay)s;
UPDATE room SET status = %(status)s, updated_at = %(at)s WHERE env_id = %(env)s AND id = %(room)s;
INSERT INTO room_stay (id, created_at, updated_at, env_id, reservation_id, property_id, room_id,
                       start_date, end_date)
VALUES (%(hold)s, %(at)s, %(at)s, %(env)s, %(stay)s, %(prop)s, %(room)s, %(start)s, %(end)s)""")
NO_OVERLAP = "room_stay_no_overlap"  # room_stay's exclusion constraint (migration 003)


def _held_by_another() -> RoomUnavailable:
    return RoomUnavailable("the room is held by another stay on these nights")

# open_folio: the OPEN guest folio gets the room number, or one is opened (at most one OPEN
# guest folio per stay: a unique index), with a block member's routing to the master folio;
# nothing reads it back, so it goes with the COMMIT
OPEN_FOLIO = Statement.text("checkin.open_folio", postgres="""
UPDATE folio SET room_number = %(number)s, updated_at = %(at)s
 WHERE env_id = %(env)s AND reservation_id = %(stay)s AND folio_type = 'GUEST'
   AND status = 'OPEN' AND room_number IS DISTINCT FROM %(number)s;
INSERT INTO folio (id, created_at, updated_at, env_id, version, reservation_id, property_id,
                   room_number, status, folio_type, currency, routing, routing_folio_id)
VALUES (%(folio)s, %(at)s, %(at)s, %(env)s, 0, %(stay)s, %(prop)s, %(number)s, %(open)s,
        'GUEST', %(currency)s, %(routing)s, %(routing_folio)s)
ON CONFLICT DO NOTHING""")


def pick_room(row: Reservation, start: date) -> Room:
    """`auto_assign` in one statement (PostgreSQL): the first vacant room of the booked type,
    in order, clean ones first, not held by another stay nor in maintenance on the nights, not
    marked out of order, locked with FOR UPDATE SKIP LOCKED (a room another check-in is taking
    is skipped, not waited for).

    Raises:
        RoomUnavailable (409): no room of the type is free for the stay.
    """
    wired = wiring.current()
    found = _pick_statement().one(prop=row.property_id, type=row.room_type_id, stay=row.id,
                                  start=start, end=row.departure_date,
                                  out_of_order=sorted(OUT_OF_ORDER_MARKS),
                                  lock=wired.locking_enabled)  # unlocked: the TEST-ONLY control
    if found is None:
        raise RoomUnavailable("no vacant room of the booked type is free for this stay")
    room = Room.from_columns(found)
    if wired.pause_after_pick is not None:  # TEST-ONLY: hold the pick open
        wired.pause_after_pick()
    return room


def occupy(uow: Any, row: Reservation, room: Room, start: date) -> None:
    """The check-in's writes on PostgreSQL, with the COMMIT: the stay's holds released, the
    room occupied and held [start, departure), the folio opened. The caller checked the room
    under its lock; the exclusion constraint is the backstop.

    Raises (from the unit of work, where the batch is sent):
        RoomUnavailable (409): the room is held by another stay on these nights.
    """
    at = utcnow()
    uow.queue(OCCUPY, {"stay": row.id, "room": room.id, "status": room.status, "at": at,
                       "hold": uuid.uuid4(), "prop": row.property_id, "start": start,
                       "end": row.departure_date},  # (a check-in's start is before it)
              refusals={NO_OVERLAP: _held_by_another})
    routing, target = block_routing(row)  # a block member's stay only: one read
    uow.queue(OPEN_FOLIO, {"stay": row.id, "number": room.room_number, "at": at,
                           "folio": uuid.uuid4(), "prop": row.property_id,
                           "open": FOLIO_INITIAL.value, "currency": row.currency,
                           "routing": routing, "routing_folio": target})


@fast_path(occupy)
def occupy_room(uow: Any, row: Reservation, room: Room, start: date) -> None:
    """The check-in's writes: the room saved (occupied), the stay's holds released, the room
    held [start, departure) and the guest folio opened (or given the room number).

    Raises:
        RoomUnavailable (409): the room is held by another stay on these nights.
    """
    room.save()
    release_room_holds(row)
    hold_room(row, room.id, start, row.departure_date)
    open_folio(row, room_number=room.room_number)


def _pick_locked(row: Reservation, start: date) -> tuple[Room, bool]:
    return pick_room(row, start), True  # locked and checked in one statement


@fast_path(_pick_locked)
def assign_room(row: Reservation, start: date) -> tuple[Room, bool]:
    """The room auto-assigned to the stay, and whether it is locked and checked already
    (PostgreSQL's `pick_room`; elsewhere `auto_assign`, and the caller locks and checks it).

    Raises:
        RoomUnavailable (409): no room of the type is free for the stay.
    """
    return auto_assign(row, start), False


# -- check-out: the room vacated and the stay's holds released --------------------------------

VACATE_ROOM = Statement.text("checkout.vacate_room", postgres=(
    "UPDATE room SET status = %(status)s, hk_status = %(hk)s, updated_at = %(at)s"
    " WHERE env_id = %(env)s AND id = %(id)s"))
RELEASE_HOLDS = Statement.text("checkout.release_holds", postgres=(
    "DELETE FROM room_stay WHERE env_id = %(env)s AND reservation_id = %(reservation)s"))


def _vacate_queued(uow: Any, row: Reservation, room: Room | None, at: Any) -> None:
    if room is not None:
        uow.queue(VACATE_ROOM, {"id": room.id, "status": room.status, "hk": room.hk_status,
                                "at": at})
    uow.queue(RELEASE_HOLDS, {"reservation": row.id})


@fast_path(_vacate_queued)
def vacate(uow: Any, row: Reservation, room: Room | None, at: Any) -> None:
    """Check-out's writes of the room: its new status saved (the caller moved it) and the
    stay's room holds released. On PostgreSQL both are queued and go with the COMMIT."""
    if room is not None:
        room.save()
    release_room_holds(row)
