"""Read side of reservations: filtered lists with cursor pagination, the in-house list, the
boarding pass and what hangs off a reservation. No writes; each call opens a read scope."""

from __future__ import annotations

import uuid
from typing import Any

import peewee

from pms.clock import local_today
from pms.context import Ctx
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope
from pms.domain.states import RESERVATION_TERMINAL, ReservationStatus
from pms.models import Reservation, ReservationComment, ReservationMessage, Room, ServiceRequest
from pms.queries.lookups import live_key_count, load_property, load_reservation
from pms.schemas import reservations as s


def _with_room(query: peewee.ModelSelect) -> peewee.ModelSelect:
    return query.select_extend(Room).join(Room, peewee.JOIN.LEFT_OUTER,
                                          on=(Reservation.room == Room.id))


def list_reservations(ctx: Ctx, property_id: uuid.UUID, q: s.ReservationQuery) -> Page[Any]:
    """A page of the property's reservations, filtered as SPEC names (guest_profile_id,
    upcoming, last_name, confirmation) plus status, arrival_date and block_id."""
    with read_scope(ctx):
        prop = load_property(property_id)
        query = _with_room(Reservation.select().where(Reservation.property == property_id))
        if ctx.holder_id is not None:
            query = query.where(Reservation.guest_profile == ctx.holder_id)
        if q.guest_profile_id is not None:
            query = query.where(Reservation.guest_profile == q.guest_profile_id)
        if q.last_name:
            query = query.where(Reservation.guest_last_name_normalized
                                == q.last_name.strip().lower())
        if q.confirmation:
            query = query.where(Reservation.confirmation_number == q.confirmation.strip())
        if q.status:
            query = query.where(Reservation.status == q.status)
        if q.arrival_date:
            query = query.where(Reservation.arrival_date == q.arrival_date)
        if q.block_id:
            query = query.where(Reservation.block_id == q.block_id)
        if q.upcoming is not None:
            today = local_today(ctx.now, prop.timezone)
            live = Reservation.status.not_in([t.value for t in RESERVATION_TERMINAL])
            cond = (Reservation.arrival_date >= today) & live
            query = query.where(cond if q.upcoming else ~cond)
        return paginate(query, Reservation, limit=q.limit, cursor=q.cursor)


def in_house(ctx: Ctx, property_id: uuid.UUID, *, limit: int, cursor: str | None) -> Page[Any]:
    """The CHECKED_IN stays of the property (a holder session sees only its own stays; the
    route itself is staff-only, this is the second filter STYLE §H asks for)."""
    with read_scope(ctx):
        load_property(property_id)
        query = _with_room(Reservation.select().where(
            (Reservation.property == property_id)
            & (Reservation.status == ReservationStatus.CHECKED_IN.value)))
        if ctx.holder_id is not None:
            query = query.where(Reservation.guest_profile == ctx.holder_id)
        return paginate(query, Reservation, limit=limit, cursor=cursor)


def boarding_pass(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID) -> s.BoardingPassOut:
    """Computed view: room, dates, guest and key count."""
    with read_scope(ctx):
        prop = load_property(property_id)
        row = load_reservation(ctx, property_id, reservation_id)
        room = Room.get_or_none(Room.id == row.room_id) if row.room_id else None
        keys = live_key_count(row.id, ctx.now)  # live keys: INACTIVE or ACTIVE, not expired
        return s.BoardingPassOut(
            reservation_id=row.id, confirmation_number=row.confirmation_number,
            status=row.status, guest_first_name=row.guest_first_name,
            guest_last_name=row.guest_last_name,
            room_number=room.room_number if room else None, arrival_date=row.arrival_date,
            departure_date=row.departure_date, key_count=keys, property_name=prop.name)


def _children(ctx: Ctx, model: Any, property_id: uuid.UUID, reservation_id: uuid.UUID, *,
              limit: int, cursor: str | None) -> Page[Any]:
    with read_scope(ctx):
        row = load_reservation(ctx, property_id, reservation_id)
        return paginate(model.select().where(model.reservation == row.id), model,
                        limit=limit, cursor=cursor)


def list_comments(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID, *, limit: int,
                  cursor: str | None) -> Page[Any]:
    return _children(ctx, ReservationComment, property_id, reservation_id, limit=limit,
                     cursor=cursor)


def list_messages(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID, *, limit: int,
                  cursor: str | None) -> Page[Any]:
    return _children(ctx, ReservationMessage, property_id, reservation_id, limit=limit,
                     cursor=cursor)


def list_service_requests(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID, *,
                          limit: int, cursor: str | None) -> Page[Any]:
    return _children(ctx, ServiceRequest, property_id, reservation_id, limit=limit,
                     cursor=cursor)
