"""Function spaces and their availability: the spaces, their out-of-order periods, and the
bookings that hold them.

A space (scope `properties`) has a capacity per setup style; a combination lists element spaces
(themselves elements) and booking it books every element. An out-of-order period refuses events
over it (409 space_out_of_order), and adding one over an event that holds the space is 409
space_booked naming the events in the way.

An event in a deducting state holds one function_space_booking row per element space over
[start - setup, end + tear-down) (`booked_interval`; `book_space` writes them). No double
booking: on PostgreSQL the exclusion constraint of migration 029 is the guarantee (a racing
insert waits for the other transaction and fails; the savepoint lets us name the event in the
way); the check before the insert names it in the common case. On SQLite the same check runs
under the write lock (BEGIN IMMEDIATE), which serializes every writer.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import peewee
from msgspec import UNSET

from pms.context import Ctx
from pms.db.database import db
from pms.db.locking import for_update, lock_errors
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope, unit_of_work
from pms.domain.money import quantize
from pms.domain.states import EVENT_DEDUCTING
from pms.errors import (
    AlreadyExists,
    Conflict,
    NotFound,
    SpaceOutOfOrder,
    SpaceTaken,
    ValidationFailed,
)
from pms.models import BanquetEvent, FunctionSpace, SpaceBooking
from pms.schemas import banquets as s
from pms.schemas.common import to_data
from pms.services.catalog.catalog import load_property
from pms.services.references import body_reference


def _invalid(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"{field}: {message}", errors=[{"field": field, "message": message}])


def space_out(row: FunctionSpace) -> s.FunctionSpaceOut:
    return s.FunctionSpaceOut(
        id=row.id, property_id=row.property_id, name=row.name, capacities=dict(row.capacities),
        element_ids=[uuid.UUID(str(e)) for e in row.element_ids],
        out_of_order=[s.OutOfOrderPeriodOut(start=datetime.fromisoformat(p["start"]),
                                            end=datetime.fromisoformat(p["end"]),
                                            reason=p.get("reason"))
                      for p in row.out_of_order],
        rental_price=row.rental_price, rental_transaction_code=row.rental_transaction_code,
        version=row.version, created_at=row.created_at, updated_at=row.updated_at)


def _periods(periods: list[s.OutOfOrderPeriod]) -> list[dict[str, Any]]:
    out = []
    for i, p in enumerate(periods):
        if p.end <= p.start:
            raise _invalid(f"out_of_order[{i}]", "end must be after start")
        out.append({"start": p.start.isoformat(), "end": p.end.isoformat(), "reason": p.reason})
    return out


def _rental(property_id: uuid.UUID, price: Any, code: str | None) -> tuple[Any, str | None]:
    """A space's rental (price, transaction code): both or neither; the code an active
    transaction code of the property; the price at the property's currency (422 otherwise)."""
    from pms.services.cashiering.transaction_codes import load_code

    if (price is None) != (code is None):
        raise _invalid("rental_transaction_code" if code is None else "rental_price",
                       "a rental charge has both a price and a transaction code")
    if price is None:
        return None, None
    try:
        load_code(property_id, code)
    except ValidationFailed as exc:
        raise _invalid("rental_transaction_code", "no such active transaction code") from exc
    return quantize(price, load_property(property_id).currency_code), code


def load_space(property_id: uuid.UUID, space_id: uuid.UUID, *, lock: bool = False
               ) -> FunctionSpace:
    query = FunctionSpace.select().where((FunctionSpace.id == space_id)
                                         & (FunctionSpace.property == property_id))
    row = (for_update(query) if lock else query).first()
    if row is None:
        raise NotFound("no such function space")
    return row


def _name_free(property_id: uuid.UUID, name: str, own: uuid.UUID | None = None) -> None:
    query = FunctionSpace.select(FunctionSpace.id).where(
        (FunctionSpace.property == property_id) & (FunctionSpace.name == name))
    if own is not None:
        query = query.where(FunctionSpace.id != own)
    if query.exists():
        raise AlreadyExists(f"a function space named {name!r} exists")


def create_space(ctx: Ctx, property_id: uuid.UUID, body: s.FunctionSpaceIn) -> FunctionSpace:
    """A function space (an element, or a combination of existing element spaces).

    Raises: NotFound (property). ValidationFailed: an element that is no element space of the
    property, a period whose end is not after its start. AlreadyExists: the name is taken.
    """
    periods = _periods(body.out_of_order)
    if len(set(body.element_ids)) != len(body.element_ids):
        raise _invalid("element_ids", "an element is listed twice")
    with lock_errors(), unit_of_work(ctx) as uow:
        load_property(property_id)
        for element_id in body.element_ids:
            with body_reference("element_ids", "no such function space", ctx):
                element = load_space(property_id, element_id)
            if element.element_ids:
                raise _invalid("element_ids", "a combination is made of element spaces only")
        if len(body.element_ids) == 1:
            raise _invalid("element_ids", "a combination has at least two elements")
        _name_free(property_id, body.name)
        price, code = _rental(property_id, body.rental_price, body.rental_transaction_code)
        try:
            with db.atomic():
                row = FunctionSpace.create(
                    property=property_id, name=body.name,
                    capacities={str(k): v for k, v in body.capacities.items()},
                    element_ids=[str(e) for e in body.element_ids], out_of_order=periods,
                    rental_price=price, rental_transaction_code=code)
        except peewee.IntegrityError as exc:
            raise AlreadyExists(f"a function space named {body.name!r} exists") from exc
        uow.record("function_space", "created", row, to_data(space_out(row)),
                   property_id=property_id)
    return row


def get_space(ctx: Ctx, property_id: uuid.UUID, space_id: uuid.UUID) -> FunctionSpace:
    with read_scope(ctx):
        return load_space(property_id, space_id)


def list_spaces(ctx: Ctx, property_id: uuid.UUID, query: Any) -> Page[FunctionSpace]:
    with read_scope(ctx):
        load_property(property_id)
        select = FunctionSpace.select().where(FunctionSpace.property == property_id)
        return paginate(select, FunctionSpace, limit=query.limit, cursor=query.cursor)


def update_space(ctx: Ctx, property_id: uuid.UUID, space_id: uuid.UUID,
                 body: s.FunctionSpacePatch) -> FunctionSpace:
    """Rename, change capacities or out-of-order periods (elements are fixed at creation).
    Capacities are not re-checked against booked events (the next change of an event is)."""
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_space(property_id, space_id, lock=True)
        before = to_data(space_out(row))
        if body.name is not UNSET:
            _name_free(property_id, body.name, row.id)
            row.name = body.name
        if body.capacities is not UNSET:
            row.capacities = {str(k): v for k, v in body.capacities.items()}
        if body.out_of_order is not UNSET:
            periods = _periods(body.out_of_order)
            _check_events_clear(row, [p for p in periods if p not in row.out_of_order])
            row.out_of_order = periods
        if body.rental_price is not UNSET or body.rental_transaction_code is not UNSET:
            row.rental_price, row.rental_transaction_code = _rental(
                property_id,
                row.rental_price if body.rental_price is UNSET else body.rental_price,
                row.rental_transaction_code if body.rental_transaction_code is UNSET
                else body.rental_transaction_code)
        row.updated_at = ctx.now
        row.save()
        uow.record("function_space", "updated", row, to_data(space_out(row)), before=before,
                   property_id=property_id)
    return row


MAX_EVENTS_NAMED = 20


def _check_events_clear(space: FunctionSpace, added: list[dict[str, Any]]) -> None:
    """New out-of-order periods must not cover an event holding the space (its own booking, or
    a combination's that lists it) in a deducting state: 409 space_booked naming the events in
    the way (move or cancel them first), as room maintenance names the reservations."""
    if not added:
        return
    combos = [c.id for c in FunctionSpace.select(FunctionSpace.id, FunctionSpace.element_ids)
              .where(FunctionSpace.property == space.property_id)
              if str(space.id) in [str(e) for e in c.element_ids]]
    events = list(BanquetEvent.select().where(
        BanquetEvent.space.in_([space.id, *combos])
        & BanquetEvent.status.in_([str(st) for st in EVENT_DEDUCTING]))
        .order_by(BanquetEvent.start_at, BanquetEvent.id))
    in_way = []
    for ev in events:
        starts, ends = booked_interval(ev)
        if any(datetime.fromisoformat(p["start"]) < ends
               and datetime.fromisoformat(p["end"]) > starts for p in added):
            in_way.append(ev)
    if in_way:
        raise Conflict(f"{len(in_way)} event(s) hold {space.name} during the out-of-order "
                       "period: move or cancel them first", code="space_booked",
                       events=[{"id": str(ev.id), "name": ev.name, "status": str(ev.status),
                                "start_at": ev.start_at.isoformat(),
                                "end_at": ev.end_at.isoformat()}
                               for ev in in_way[:MAX_EVENTS_NAMED]])


def delete_space(ctx: Ctx, property_id: uuid.UUID, space_id: uuid.UUID) -> None:
    """Raises Conflict (409 space_in_use) while an event uses it or a combination lists it."""
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_space(property_id, space_id, lock=True)
        if BanquetEvent.select(BanquetEvent.id).where(BanquetEvent.space == row.id).exists():
            raise Conflict("an event uses this function space", code="space_in_use")
        combos = FunctionSpace.select().where((FunctionSpace.property == property_id)
                                              & (FunctionSpace.id != row.id))
        if any(str(row.id) in c.element_ids for c in combos):
            raise Conflict("a combination lists this space as an element", code="space_in_use")
        data = to_data(space_out(row))
        uow.record("function_space", "deleted", row, data, before=data,
                   property_id=property_id)
        FunctionSpace.delete().where(FunctionSpace.id == row.id).execute()


def booked_interval(row: BanquetEvent) -> tuple[datetime, datetime]:
    """[start - setup, end + tear-down): what the event holds of its space and resources."""
    return (row.start_at - timedelta(minutes=row.setup_minutes),
            row.end_at + timedelta(minutes=row.teardown_minutes))


def elements_of(space: FunctionSpace) -> list[uuid.UUID]:
    return [uuid.UUID(str(e)) for e in space.element_ids] or [space.id]


def _check_out_of_order(space: FunctionSpace, starts: datetime, ends: datetime) -> None:
    spaces = [space] + [load_space(space.property_id, e) for e in elements_of(space)
                        if e != space.id]
    for sp in spaces:
        for p in sp.out_of_order:
            if datetime.fromisoformat(p["start"]) < ends and datetime.fromisoformat(p["end"]) > starts:
                raise SpaceOutOfOrder(f"{sp.name} is out of order from {p['start']} to "
                                      f"{p['end']}", space_id=str(sp.id))


def overlapping_booking(env_elements: list[uuid.UUID], starts: datetime, ends: datetime,
                        event_id: uuid.UUID) -> SpaceBooking | None:
    """A booking row of another event on one of the elements over [starts, ends)."""
    return (SpaceBooking.select().where(
        SpaceBooking.space_id.in_(env_elements) & (SpaceBooking.starts < ends)
        & (SpaceBooking.ends > starts) & (SpaceBooking.event != event_id))
        .order_by(SpaceBooking.starts).first())


def _taken(other: SpaceBooking) -> SpaceTaken:
    return SpaceTaken(f"the space is booked by event {other.event_id} from "
                      f"{other.starts.isoformat()} to {other.ends.isoformat()}",
                      conflicting_event_id=str(other.event_id), space_id=str(other.space_id))


def book_space(row: BanquetEvent, space: FunctionSpace, starts: datetime, ends: datetime
               ) -> None:
    """Hold `space` (each of its elements) for the event over [starts, ends): 409
    space_out_of_order over an out-of-order period, 409 space_taken naming the event in the
    way. The caller removed the event's own bookings first."""
    _check_out_of_order(space, starts, ends)
    elements = elements_of(space)
    other = overlapping_booking(elements, starts, ends, row.id)
    if other is not None:
        raise _taken(other)
    try:
        with db.atomic():  # a savepoint: a racing insert's failure leaves us able to name it
            SpaceBooking.insert_many([{"event": row.id, "space_id": e, "starts": starts,
                                       "ends": ends} for e in elements]).execute()
    except peewee.IntegrityError as exc:  # PostgreSQL: function_space_no_overlap
        other = overlapping_booking(elements, starts, ends, row.id)
        if other is None:
            raise
        raise _taken(other) from exc
