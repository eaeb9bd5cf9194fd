"""Use cases for maintenance: take a room out of order or out of service, and give it back.

A period counts against the inventory of the room's type for its nights (OUT_OF_ORDER -> ooo,
OUT_OF_SERVICE -> oos). Creating one locks those nights of the room type (the same locks, in the
same order, as the booking path) and is refused with 409 maintenance_conflict, listing the
reservations in the way, when the room itself is held by a live stay on those nights or when a
night would have more rooms sold than rooms left in service.
"""

from __future__ import annotations

import uuid
from datetime import date, timedelta
from typing import Any

from pms.context import Ctx
from pms.db import locking
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope, unit_of_work
from pms.domain.availability import usable
from pms.domain.states import ReservationStatus
from pms.domain.stay import date_span
from pms.errors import MaintenanceConflict, NotFound, ValidationFailed
from pms.events import event_type
from pms.models.inventory import Maintenance
from pms.models.property import Room
from pms.models.reservations import Reservation
from pms.schemas import inventory as s
from pms.schemas.common import to_data
from pms.services.catalog.catalog import load_property
from pms.services.inventory.block_undercut import undercut_blocks
from pms.services.inventory.inventory import lock_days, recount_locked, refresh_counts

MAX_MAINTENANCE_DAYS = 366
LIVE = (ReservationStatus.CONFIRMED.value, ReservationStatus.CHECKED_IN.value)
MAX_LISTED = 50


def _load_room(property_id: uuid.UUID, body: s.MaintenanceIn) -> Room:
    if (body.room_id is None) == (body.room_number is None):
        raise ValidationFailed("give exactly one of room_id and room_number",
                               errors=[{"field": "room_id", "message": "room_id or room_number"}])
    cond = (Room.id == body.room_id) if body.room_id else (Room.room_number == body.room_number)
    room = locking.for_update(
        Room.select().where((Room.property == property_id) & cond)).first()
    if room is None:
        field = "room_id" if body.room_id else "room_number"
        raise ValidationFailed(f"{field} is not a room of this property",
                               errors=[{"field": field, "message": "unknown room"}])
    return room


def _reservation_ref(r: Reservation) -> dict[str, Any]:
    return {"id": str(r.id), "confirmation_number": r.confirmation_number, "status": r.status,
            "arrival_date": r.arrival_date.isoformat(),
            "departure_date": r.departure_date.isoformat(),
            "room_id": str(r.room_id) if r.room_id else None}


def _in_the_way(room: Room, first: date, last: date, short: list[date]) -> list[Reservation]:
    """Live reservations holding this room on the nights, or of its type on short nights."""
    overlaps = (Reservation.arrival_date <= last) & (Reservation.departure_date > first)
    live = Reservation.status.in_(LIVE)
    cond = Reservation.room == room.id
    if short:
        cond = cond | ((Reservation.room_type == room.room_type_id)
                       & (Reservation.arrival_date <= max(short))
                       & (Reservation.departure_date > min(short)))
    query = (Reservation.select().where((Reservation.property == room.property_id) & live
                                        & overlaps & cond)
             .order_by(Reservation.arrival_date, Reservation.confirmation_number).limit(MAX_LISTED))
    return list(query)


def create_maintenance(ctx: Ctx, property_id: uuid.UUID, body: s.MaintenanceIn, *,
                       with_blocks: bool = False) -> Any:
    """Take a room out of order or out of service for from_date..to_date (inclusive).

    Raises:
        NotFound: no such property.
        ValidationFailed: bad range, neither or both of room_id/room_number, unknown room.
        MaintenanceConflict: the room already has an active period on those nights, the room is
            held by a live reservation, or a night's sold rooms would exceed the rooms left in
            service (409 maintenance_conflict with `nights` and `reservations`).
        A period that leaves rooms held by blocks above the rooms in service is kept;
        with `with_blocks` the answer's third item names those blocks (`undercut_blocks`).
        LockTimeout: the nights are busy (503).
    """
    days = date_span(body.from_date, body.to_date, max_days=MAX_MAINTENANCE_DAYS)
    end = body.to_date + timedelta(days=1)
    with unit_of_work(ctx) as uow:
        load_property(property_id)
        room = _load_room(property_id, body)
        overlap = Maintenance.select().where(
            (Maintenance.room == room.id) & Maintenance.active
            & (Maintenance.from_date <= body.to_date) & (Maintenance.to_date >= body.from_date)
        ).first()
        if overlap is not None:
            raise MaintenanceConflict(
                f"room {room.room_number} already has a maintenance period "
                f"{overlap.from_date}..{overlap.to_date}", maintenance_id=str(overlap.id))
        with locking.lock_errors():
            rows = lock_days(property_id, room.room_type_id, days, capacity=True)
            counts = recount_locked(property_id, rows, body.from_date, end)
            short = [r.date for r in rows
                     if r.sold > usable(counts[(r.room_type_id, r.date)].physical,
                                        counts[(r.room_type_id, r.date)].ooo + 1,
                                        counts[(r.room_type_id, r.date)].oos)]
            blocking = _in_the_way(room, body.from_date, body.to_date, short)
            if short or any(r.room_id == room.id for r in blocking):
                raise MaintenanceConflict(
                    f"room {room.room_number} cannot be taken out on these nights: "
                    + (f"sold out on {', '.join(d.isoformat() for d in short)}" if short
                       else "the room is held by a reservation"),
                    nights=[d.isoformat() for d in short],
                    reservations=[_reservation_ref(r) for r in blocking])
            row = Maintenance.create(property=property_id, room=room.id, kind=body.kind,
                                     from_date=body.from_date, to_date=body.to_date,
                                     reason=body.reason, active=True)
            after = recount_locked(property_id, rows, body.from_date, end)
            refresh_counts(rows, after)
            affected = undercut_blocks(property_id, after)  # kept, the blocks named
        data = to_data(s.maintenance_out(row, room))
        uow.audit("maintenance.created", row, after=data)
        uow.emit(event_type("maintenance", "created"), row, data, property_id=property_id)
    return (row, room, affected) if with_blocks else (row, room)


def end_maintenance(ctx: Ctx, property_id: uuid.UUID, maintenance_id: uuid.UUID) -> None:
    """Give the room back (the period stays listed with active=false). Repeats are no-ops.

    Raises:
        NotFound: no such maintenance period. LockTimeout: busy (503).
    """
    with unit_of_work(ctx) as uow:
        row = locking.for_update(Maintenance.select().where(
            (Maintenance.id == maintenance_id) & (Maintenance.property == property_id))).first()
        if row is None:
            raise NotFound("no such maintenance period")
        room = Room.get_by_id(row.room_id)
        if row.active:
            before = to_data(s.maintenance_out(row, room))
            with locking.lock_errors():
                days = date_span(row.from_date, row.to_date, max_days=MAX_MAINTENANCE_DAYS)
                rows = lock_days(property_id, room.room_type_id, days, capacity=True)
                row.active = False
                row.save()
                refresh_counts(rows, recount_locked(property_id, rows, row.from_date,
                                              row.to_date + timedelta(days=1)))
            uow.audit("maintenance.deleted", row, before=before,
                      after=to_data(s.maintenance_out(row, room)))
            uow.emit(event_type("maintenance", "deleted"), row,
                     to_data(s.maintenance_out(row, room)), property_id=property_id)


def get_maintenance(ctx: Ctx, property_id: uuid.UUID,
                    maintenance_id: uuid.UUID) -> tuple[Maintenance, Room]:
    """One maintenance period and its room. Raises NotFound."""
    with read_scope(ctx):
        row = Maintenance.get_or_none((Maintenance.id == maintenance_id)
                                      & (Maintenance.property == property_id))
        if row is None:
            raise NotFound("no such maintenance period")
        return row, Room.get_by_id(row.room_id)


def list_maintenance(ctx: Ctx, property_id: uuid.UUID,
                     query: s.MaintenanceQuery) -> tuple[Page[Maintenance], dict[uuid.UUID, Room]]:
    """A page of maintenance periods (filters: room, active) and their rooms by id.

    Raises:
        NotFound: no such property. ValidationFailed: bad cursor.
    """
    with read_scope(ctx):
        load_property(property_id)
        q = Maintenance.select().where(Maintenance.property == property_id)
        if query.room_id is not None:
            q = q.where(Maintenance.room == query.room_id)
        if query.active is not None:
            q = q.where(Maintenance.active == query.active)
        page = paginate(q, Maintenance, limit=query.limit, cursor=query.cursor)
        ids = {m.room_id for m in page.items}
        rooms = {r.id: r for r in Room.select().where(Room.id.in_(list(ids)))} if ids else {}
    return page, rooms


def room_blocked(room_id: uuid.UUID, start: date, end: date) -> Maintenance | None:
    """The active maintenance period of a room touching the nights [start, end), if any.

    For check-in and room assignment: periods are inclusive of `to_date` (its last night), so
    the overlap test is `from_date < end and to_date >= start`. Call inside a scope.
    """
    return (Maintenance.select()
            .where((Maintenance.room == room_id) & Maintenance.active
                   & (Maintenance.from_date < end) & (Maintenance.to_date >= start))
            .order_by(Maintenance.from_date).first())
