"""Splitting one stay into two consecutive reservations at a date: each with its own
confirmation number, its nights' prices and its room nights; the nights sold stay the same.
`pms.services.reservations.stays.split` names it too.
"""

from __future__ import annotations

import uuid
from datetime import date
from typing import Any

import peewee

from pms.context import Ctx
from pms.db.locking import lock_errors
from pms.db.uow import unit_of_work
from pms.domain import states
from pms.domain.states import RESERVATION_MACHINE, ReservationStatus
from pms.errors import ValidationFailed
from pms.models import Reservation, RoomStay
from pms.schemas import reservations as s
from pms.schemas.common import to_data
from pms.services.keys import stay_hooks
from pms.services.reservations.reservations import (
    load_reservation,
    new_confirmation_number,
)


def split(ctx: Ctx, property_id: uuid.UUID, reservation_id: uuid.UUID,
          body: s.SplitIn) -> tuple[Reservation, Reservation]:
    """Split one stay into two consecutive reservations at `split_date`, each with its own
    confirmation number; the nights sold stay the same (no inventory change).

    Raises:
        NotFound. InvalidTransition (409): terminal stay.
        ValidationFailed: split_date not strictly inside the stay.
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_reservation(ctx, property_id, reservation_id, lock=True)
        status = RESERVATION_MACHINE.transition(row.status, "split")
        at = body.split_date
        if not (row.arrival_date < at < row.departure_date):
            raise ValidationFailed("split_date must be after arrival_date and before "
                                   "departure_date", errors=[{"field": "split_date",
                                                              "message": "not inside the stay"}])
        before = to_data(s.reservation_out(row))
        first, second = _split_prices(row, at)
        new = Reservation(**_copy_fields(row))
        new.id = uuid.uuid4()
        new.confirmation_number = new_confirmation_number()
        new.status = states.RESERVATION_INITIAL.value
        new.arrival_date, new.departure_date, new.split_from = at, row.departure_date, row.id
        new.checked_in_at = new.checked_in_business_date = None
        new.version = 0
        _set_prices(new, second)
        new.save(force_insert=True)
        holds = list(RoomStay.select().where(RoomStay.reservation == row.id))
        for hold in holds:
            if hold.end_date > at:
                start = max(hold.start_date, at)
                RoomStay.update(end_date=at).where(RoomStay.id == hold.id).execute()
                if hold.start_date >= at:
                    RoomStay.delete().where(RoomStay.id == hold.id).execute()
                RoomStay.create(reservation=new.id, property=row.property_id,
                                room=hold.room_id, start_date=start, end_date=hold.end_date)
        row.departure_date = at
        if row.status == ReservationStatus.CHECKED_IN:  # the stay's keys end with its first part
            stay_hooks.move_validity(uow, row)
        _set_prices(row, first)
        row.status = status.value
        row.save()
        data = to_data(s.SplitOut(reservation=s.reservation_out(row),
                                  new_reservation=s.reservation_out(new)))
        uow.audit("reservation.split", row, before=before, after=data)
        uow.emit("hotel:pms:reservation:split", new, data, property_id=row.property_id)
    return row, new


_NOT_COPIED = {"id", "version", "created_at", "updated_at"}


def _copy_fields(row: Reservation) -> dict[str, Any]:
    return {name: getattr(row, field.name if not isinstance(field, peewee.ForeignKeyField)
                          else field.name + "_id")
            for name, field in Reservation._meta.fields.items() if name not in _NOT_COPIED}


def _split_prices(row: Reservation, at: date) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    prices = row.nightly_prices or []
    return ([p for p in prices if date.fromisoformat(str(p["date"])) < at],
            [p for p in prices if date.fromisoformat(str(p["date"])) >= at])


def _set_prices(row: Reservation, prices: list[dict[str, Any]]) -> None:
    from decimal import Decimal

    from pms.domain.money import quantize

    room_total = sum((Decimal(str(p["amount"])) for p in prices), Decimal(0))
    old_room_total = Decimal(str(row.room_total)) or Decimal(1)
    share = room_total / old_room_total if row.room_total else Decimal(0)
    row.nightly_prices = prices
    row.packages_total = quantize(Decimal(str(row.packages_total)) * share, row.currency)
    row.discount_total = quantize(Decimal(str(row.discount_total)) * share, row.currency)
    row.room_total = quantize(room_total, row.currency)
    row.total_amount = row.room_total + row.packages_total - row.discount_total
