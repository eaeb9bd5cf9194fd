"""Banquet events on function spaces: spaces, events, their resources, posting.

Function spaces (scope `properties`): capacity per setup style; a combination lists element
spaces (themselves elements) and booking it books every element; out-of-order periods refuse
events over them (409 space_out_of_order).

Events (scope `events`): born INQUIRY, moved by EVENT_MACHINE (pms/domain/states.py). An event
in a deducting state (TENTATIVE, DEFINITE, ACTUAL: EVENT_DEDUCTING) holds one
function_space_booking row per element space over [start - setup, end + tear-down). INQUIRY
holds nothing (a mere request), CLOSED, CANCELLED and LOST release. Attendees (forecast,
guaranteed, actual) must fit the chosen setup's capacity (422).

No double booking: on PostgreSQL the exclusion constraint of migration 029 is the guarantee (a
racing insert waits for the other transaction and fails; the savepoint lets us name the event in
the way); the check before the insert names it in the common case. On SQLite the same check runs
under the write lock (BEGIN IMMEDIATE), which serializes every writer.

Resources: an event books a quantity of an item (equipment, menu) over its interval; while the
event deducts, the peak of overlapping deducting bookings of the item never exceeds its stock
(the item row is locked first on PostgreSQL; SQLite's write lock serializes).

Posting: an ACTUAL event posts each resource (unit price x quantity, x actual attendees for a
per-attendee item) to the open folio named on the event; event_posting remembers what was
posted per (event, resource), so a repeat posts nothing and a change (actual attendees, quantity,
a removed resource) posts only the difference (a negative difference is an allowance line).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import peewee
from msgspec import UNSET

from pms import wiring
from pms.context import Ctx
from pms.db.database import db
from pms.db.locking import for_update, lock_errors
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope, unit_of_work
from pms.domain.money import quantize
from pms.domain.states import EVENT_DEDUCTING, EVENT_INITIAL, EVENT_MACHINE, EventStatus
from pms.errors import (
    AlreadyExists,
    Conflict,
    NotFound,
    SpaceOutOfOrder,
    SpaceTaken,
    StockExhausted,
    ValidationFailed,
)
from pms.models import (
    BanquetEvent,
    EventPosting,
    EventResource,
    EventResourceItem,
    FunctionSpace,
    SpaceBooking,
)
from pms.schemas import banquets as s
from pms.schemas.common import to_data
from pms.services.catalog.catalog import load_property
from pms.services.references import body_reference

EDITABLE = frozenset({EventStatus.INQUIRY, EventStatus.TENTATIVE, EventStatus.DEFINITE,
                      EventStatus.ACTUAL})
TRIGGERS = ("tentative", "definite", "actual", "close", "cancel", "lose")


def _invalid(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"{field}: {message}", errors=[{"field": field, "message": message}])


# -- function spaces ------------------------------------------------------------------------------

def space_out(row: FunctionSpace) -> s.FunctionSpaceOut:
    return s.FunctionSpaceOut(
        id=row.id, property_id=row.property_id, name=row.name, capacities=dict(row.capacities),
        element_ids=[uuid.UUID(str(e)) for e in row.element_ids],
        out_of_order=[s.OutOfOrderPeriodOut(start=datetime.fromisoformat(p["start"]),
                                            end=datetime.fromisoformat(p["end"]),
                                            reason=p.get("reason"))
                      for p in row.out_of_order],
        version=row.version, created_at=row.created_at, updated_at=row.updated_at)


def _periods(periods: list[s.OutOfOrderPeriod]) -> list[dict[str, Any]]:
    out = []
    for i, p in enumerate(periods):
        if p.end <= p.start:
            raise _invalid(f"out_of_order[{i}]", "end must be after start")
        out.append({"start": p.start.isoformat(), "end": p.end.isoformat(), "reason": p.reason})
    return out


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
        try:
            with db.atomic():
                row = FunctionSpace.create(
                    property=property_id, name=body.name,
                    capacities={str(k): v for k, v in body.capacities.items()},
                    element_ids=[str(e) for e in body.element_ids], out_of_order=periods)
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


# -- events ---------------------------------------------------------------------------------------

def event_out(row: BanquetEvent) -> s.BanquetEventOut:
    return s.BanquetEventOut(
        id=row.id, property_id=row.property_id, space_id=row.space_id, block_id=row.block_id,
        folio_id=row.folio_id, name=row.name, status=row.status, setup_style=row.setup_style,
        start_at=row.start_at, end_at=row.end_at, setup_minutes=row.setup_minutes,
        teardown_minutes=row.teardown_minutes, attendees_forecast=row.attendees_forecast,
        attendees_guaranteed=row.attendees_guaranteed, attendees_actual=row.attendees_actual,
        version=row.version, created_at=row.created_at, updated_at=row.updated_at)


def booked_interval(row: BanquetEvent) -> tuple[datetime, datetime]:
    """[start - setup, end + tear-down): what the event holds of its space and resources."""
    return (row.start_at - timedelta(minutes=row.setup_minutes),
            row.end_at + timedelta(minutes=row.teardown_minutes))


def elements_of(space: FunctionSpace) -> list[uuid.UUID]:
    return [uuid.UUID(str(e)) for e in space.element_ids] or [space.id]


def _check_fit(row: BanquetEvent, space: FunctionSpace) -> None:
    if row.end_at <= row.start_at:
        raise _invalid("end_at", "must be after start_at")
    capacity = space.capacities.get(row.setup_style)
    if capacity is None:
        raise _invalid("setup_style", f"the space has no {row.setup_style} setup")
    for field in ("attendees_forecast", "attendees_guaranteed", "attendees_actual"):
        value = getattr(row, field)
        if value is not None and value > capacity:
            raise _invalid(field, f"{value} is over the {row.setup_style} capacity {capacity}")


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


def _rebook(row: BanquetEvent, space: FunctionSpace) -> None:
    """Write the event's space bookings for its state and interval (none unless deducting),
    then re-check its resources' stock."""
    SpaceBooking.delete().where(SpaceBooking.event == row.id).execute()
    starts, ends = booked_interval(row)
    EventResource.update(starts=starts, ends=ends).where(EventResource.event == row.id).execute()
    if row.status not in EVENT_DEDUCTING:
        return
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
    resources = list(EventResource.select().where(EventResource.event == row.id)
                     .order_by(EventResource.item))
    for res in resources:
        item = _lock_item(row.property_id, res.item_id)
        _check_stock(item, starts, ends, res.quantity, row)


def load_event(ctx: Ctx, property_id: uuid.UUID, event_id: uuid.UUID, *, lock: bool = False
               ) -> BanquetEvent:
    query = BanquetEvent.select().where((BanquetEvent.id == event_id)
                                        & (BanquetEvent.property == property_id))
    row = (for_update(query) if lock else query).first()
    if row is None:
        raise NotFound("no such event")
    return row


def create_event(ctx: Ctx, property_id: uuid.UUID, body: s.BanquetEventIn) -> BanquetEvent:
    """A banquet event, born INQUIRY (it holds no space until TENTATIVE).

    Raises: NotFound (property). ValidationFailed: unknown space or folio, end not after
    start, a setup the space lacks, attendees over its capacity.
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        load_property(property_id)
        with body_reference("space_id", "no such function space", ctx):
            space = load_space(property_id, body.space_id)
        if body.folio_id is not None:
            _check_folio(ctx, property_id, body.folio_id)
        row = BanquetEvent(
            property=property_id, space=space.id, name=body.name,
            status=EVENT_MACHINE.states(EVENT_INITIAL), setup_style=str(body.setup_style),
            start_at=body.start_at, end_at=body.end_at, setup_minutes=body.setup_minutes,
            teardown_minutes=body.teardown_minutes, attendees_forecast=body.attendees_forecast,
            attendees_guaranteed=body.attendees_guaranteed, folio_id=body.folio_id,
            block_id=body.block_id)
        _check_fit(row, space)
        _check_block(ctx, row)
        row.save(force_insert=True)
        uow.record("event", "created", row, to_data(event_out(row)), property_id=property_id)
    return row


# an event linked to a room block happens during the block's stay, or on the shoulder
# days around it (a welcome dinner the evening before arrival, a farewell lunch on departure).
BLOCK_SHOULDER_DAYS = 2


def _check_block(ctx: Ctx, row: BanquetEvent) -> None:
    """A linked block must be a block of the event's property (422 unknown_reference) whose
    dates, widened by BLOCK_SHOULDER_DAYS, hold the event's local dates (422 block_id)."""
    from zoneinfo import ZoneInfo

    from pms.services.groups.room_blocks import load_block

    if row.block_id is None:
        return
    with body_reference("block_id", "no such block", ctx):
        block = load_block(row.property_id, row.block_id)
    zone = ZoneInfo(load_property(row.property_id).timezone)
    first = row.start_at.astimezone(zone).date()
    last = row.end_at.astimezone(zone).date()
    earliest = block.arrival_date - timedelta(days=BLOCK_SHOULDER_DAYS)
    latest = block.departure_date + timedelta(days=BLOCK_SHOULDER_DAYS)
    if first < earliest or last > latest:
        raise _invalid("block_id", f"the event must lie between {earliest} and {latest} (the "
                       f"block's dates with {BLOCK_SHOULDER_DAYS} shoulder days)")


def _check_folio(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID) -> None:
    from pms.services.cashiering.cashiering import load_folio

    with body_reference("folio_id", "no such folio", ctx):
        load_folio(ctx, property_id, folio_id)


def get_event(ctx: Ctx, property_id: uuid.UUID, event_id: uuid.UUID) -> BanquetEvent:
    with read_scope(ctx):
        return load_event(ctx, property_id, event_id)


def update_event(ctx: Ctx, property_id: uuid.UUID, event_id: uuid.UUID,
                 body: s.BanquetEventPatch) -> BanquetEvent:
    """Change an event that is not CLOSED, CANCELLED or LOST (409 invalid_transition); a
    deducting event that moves re-books its space and resources (409 space_taken /
    stock_exhausted); once it has posted, its folio_id and block_id stay (409 event_posted)."""
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_event(ctx, property_id, event_id, lock=True)
        EVENT_MACHINE.transition(row.status, "edit")
        before = to_data(event_out(row))
        held_before = (row.space_id, booked_interval(row))
        moves_billing = any(getattr(body, f) is not UNSET and getattr(body, f) != getattr(row, f)
                            for f in ("folio_id", "block_id"))
        if moves_billing and EventPosting.select(EventPosting.id).where(
                EventPosting.event == row.id).exists():
            # later differences would go to the new folio, the posted charges stay on the old
            raise Conflict("the event has posted charges: its folio_id and block_id stay",
                           code="event_posted")
        if body.space_id is not UNSET:
            with body_reference("space_id", "no such function space", ctx):
                row.space = load_space(property_id, body.space_id).id
        if body.folio_id is not UNSET and body.folio_id is not None:
            _check_folio(ctx, property_id, body.folio_id)
        for field in ("name", "start_at", "end_at", "setup_minutes", "teardown_minutes",
                      "attendees_forecast", "attendees_guaranteed", "attendees_actual",
                      "folio_id", "block_id"):
            value = getattr(body, field)
            if value is not UNSET:
                setattr(row, field, value)
        if body.setup_style is not UNSET:
            row.setup_style = str(body.setup_style)
        space = load_space(property_id, row.space_id)
        _check_fit(row, space)
        _check_block(ctx, row)
        row.updated_at = ctx.now
        row.save()
        if (row.space_id, booked_interval(row)) != held_before:  # the event moved
            _rebook(row, space)
        uow.record("event", "updated", row, to_data(event_out(row)), before=before,
                   property_id=property_id)
    return row


DELETABLE_EVENTS = frozenset({EventStatus.INQUIRY, EventStatus.TENTATIVE, EventStatus.CANCELLED,
                              EventStatus.LOST})


def delete_event(ctx: Ctx, property_id: uuid.UUID, event_id: uuid.UUID) -> None:
    """Delete an INQUIRY, TENTATIVE, CANCELLED or LOST event that posted nothing (409
    event_in_use for a DEFINITE, ACTUAL or CLOSED one: cancel it instead; 409 event_posted
    while it has postings)."""
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_event(ctx, property_id, event_id, lock=True)
        if EventPosting.select(EventPosting.id).where(EventPosting.event == row.id).exists():
            raise Conflict("the event has posted charges; cancel or close it instead",
                           code="event_posted")
        if EventStatus(row.status) not in DELETABLE_EVENTS:
            raise Conflict(f"a {row.status} event cannot be deleted; cancel it instead",
                           code="event_in_use", event_status=str(row.status))
        data = to_data(event_out(row))
        uow.record("event", "deleted", row, data, before=data, property_id=property_id)
        SpaceBooking.delete().where(SpaceBooking.event == row.id).execute()
        EventResource.delete().where(EventResource.event == row.id).execute()
        BanquetEvent.delete().where(BanquetEvent.id == row.id).execute()


def transition(ctx: Ctx, property_id: uuid.UUID, event_id: uuid.UUID, trigger: str
               ) -> BanquetEvent:
    """Move the event by EVENT_MACHINE (409 invalid_transition for a move not in the table).
    Into a deducting state it books its space (409 space_taken naming the event in the way);
    out of one it releases. `actual` without actual attendees takes the guaranteed (else the
    forecast) count."""
    with lock_errors(), unit_of_work(ctx) as uow:
        row = load_event(ctx, property_id, event_id, lock=True)
        before = to_data(event_out(row))
        was_holding = row.status in EVENT_DEDUCTING
        row.status = EVENT_MACHINE.transition(row.status, trigger)
        if row.status == EventStatus.ACTUAL and row.attendees_actual is None:
            row.attendees_actual = (row.attendees_guaranteed
                                    if row.attendees_guaranteed is not None
                                    else row.attendees_forecast)
        row.updated_at = ctx.now
        row.save()
        if not (was_holding and row.status in EVENT_DEDUCTING):  # it holds what it held
            _rebook(row, load_space(property_id, row.space_id))
        uow.record("event", str(row.status).lower(), row, to_data(event_out(row)),
                   before=before, property_id=property_id)
    return row


# -- resource items and event resources -----------------------------------------------------------

def item_out(row: EventResourceItem) -> s.ResourceItemOut:
    return s.ResourceItemOut(id=row.id, property_id=row.property_id, code=row.code,
                             name=row.name, kind=row.kind, stock=row.stock,
                             unit_price=row.unit_price, transaction_code=row.transaction_code,
                             per_attendee=row.per_attendee, version=row.version)


def create_item(ctx: Ctx, property_id: uuid.UUID, body: s.ResourceItemIn) -> EventResourceItem:
    from pms.services.cashiering.transaction_codes import load_code

    with lock_errors(), unit_of_work(ctx) as uow:
        prop = load_property(property_id)
        load_code(property_id, body.transaction_code)
        if EventResourceItem.select(EventResourceItem.id).where(
                (EventResourceItem.property == property_id)
                & (EventResourceItem.code == body.code)).exists():
            raise AlreadyExists(f"an event resource item {body.code} exists")
        row = EventResourceItem.create(
            property=property_id, code=body.code, name=body.name, kind=str(body.kind),
            stock=body.stock, unit_price=quantize(body.unit_price, prop.currency_code),
            transaction_code=body.transaction_code, per_attendee=body.per_attendee)
        uow.record("event_resource_item", "created", row, to_data(item_out(row)),
                   property_id=property_id)
    return row


def _load_item(property_id: uuid.UUID, item_id: uuid.UUID) -> EventResourceItem:
    row = EventResourceItem.select().where((EventResourceItem.id == item_id)
                                           & (EventResourceItem.property == property_id)).first()
    if row is None:
        raise NotFound("no such event resource item")
    return row


def _lock_item(property_id: uuid.UUID, item_id: uuid.UUID) -> EventResourceItem:
    row = for_update(EventResourceItem.select().where(
        (EventResourceItem.id == item_id) & (EventResourceItem.property == property_id))).first()
    if row is None:
        raise NotFound("no such event resource item")
    return row


def list_items(ctx: Ctx, property_id: uuid.UUID, query: Any) -> Page[EventResourceItem]:
    with read_scope(ctx):
        load_property(property_id)
        select = EventResourceItem.select().where(EventResourceItem.property == property_id)
        return paginate(select, EventResourceItem, limit=query.limit, cursor=query.cursor)


def update_item(ctx: Ctx, property_id: uuid.UUID, item_id: uuid.UUID,
                body: s.ResourceItemPatch) -> EventResourceItem:
    """Rename, reprice or restock (a stock below what is booked at its peak: 409)."""
    with lock_errors(), unit_of_work(ctx) as uow:
        row = _lock_item(property_id, item_id)
        before = to_data(item_out(row))
        if body.name is not UNSET:
            row.name = body.name
        if body.unit_price is not UNSET:
            row.unit_price = quantize(body.unit_price,
                                      load_property(property_id).currency_code)
        if body.stock is not UNSET:
            row.stock = body.stock
            peak = peak_usage(row.id, None, None, None)
            if peak > row.stock:
                raise StockExhausted(f"{peak} of {row.code} are booked at once; the stock "
                                     f"cannot go below", count=peak)
        row.updated_at = ctx.now
        row.save()
        uow.record("event_resource_item", "updated", row, to_data(item_out(row)),
                   before=before, property_id=property_id)
    return row


def covers(ev: BanquetEvent) -> int:
    """The event's covers as best known: actual, else guaranteed, else forecast attendees."""
    for count in (ev.attendees_actual, ev.attendees_guaranteed, ev.attendees_forecast):
        if count is not None:
            return int(count)
    return 0


def units(quantity: int, per_attendee: bool, ev: BanquetEvent) -> int:
    """What a booking takes of an item's stock, counted as posting counts it: a per-attendee
    item (a menu) takes its quantity per cover, any other item its quantity."""
    return quantity * covers(ev) if per_attendee else quantity


def peak_usage(item_id: uuid.UUID, starts: datetime | None, ends: datetime | None,
               exclude_event: uuid.UUID | None) -> int:
    """The peak sum of the units (`units`) deducting events' bookings take of the item at one
    instant (within [starts, ends) when given)."""
    query = (EventResource.select(EventResource.quantity, EventResource.starts,
                                  EventResource.ends, EventResourceItem.per_attendee,
                                  BanquetEvent.attendees_actual,
                                  BanquetEvent.attendees_guaranteed,
                                  BanquetEvent.attendees_forecast)
             .join(BanquetEvent, on=(EventResource.event == BanquetEvent.id))
             .switch(EventResource)
             .join(EventResourceItem, on=(EventResource.item == EventResourceItem.id))
             .where((EventResource.item == item_id)
                    & BanquetEvent.status.in_([str(x) for x in EVENT_DEDUCTING])))
    if starts is not None and ends is not None:
        query = query.where((EventResource.starts < ends) & (EventResource.ends > starts))
    if exclude_event is not None:
        query = query.where(EventResource.event != exclude_event)
    points: list[tuple[datetime, int]] = []
    for b in query.objects():
        lo = b.starts if starts is None else max(b.starts, starts)
        hi = b.ends if ends is None else min(b.ends, ends)
        taken = units(b.quantity, bool(b.per_attendee), b)
        points += [(lo, taken), (hi, -taken)]
    peak = current = 0
    for _, delta in sorted(points, key=lambda p: (p[0], p[1])):  # ends (-) before starts (+)
        current += delta
        peak = max(peak, current)
    return peak


def _check_stock(item: EventResourceItem, starts: datetime, ends: datetime, quantity: int,
                 ev: BanquetEvent) -> None:
    peak = peak_usage(item.id, starts, ends, ev.id)
    pause = wiring.current().pause_after_check
    if pause is not None:  # TEST-ONLY: widen the window a concurrent booking would need
        pause()
    wanted = units(quantity, bool(item.per_attendee), ev)
    if peak + wanted > item.stock:
        raise StockExhausted(f"{item.code}: {peak} of {item.stock} are booked over the event's "
                             f"time; {wanted} more do not fit",
                             available=max(item.stock - peak, 0))


def resource_out(res: EventResource, item: EventResourceItem) -> s.EventResourceOut:
    return s.EventResourceOut(id=res.id, event_id=res.event_id, item_id=item.id, code=item.code,
                              name=item.name, kind=item.kind, quantity=res.quantity,
                              unit_price=item.unit_price, per_attendee=item.per_attendee)


def list_resources(ctx: Ctx, property_id: uuid.UUID, event_id: uuid.UUID
                   ) -> list[s.EventResourceOut]:
    with read_scope(ctx):
        ev = load_event(ctx, property_id, event_id)
        rows = (EventResource.select(EventResource, EventResourceItem)
                .join(EventResourceItem, on=(EventResource.item == EventResourceItem.id))
                .where(EventResource.event == ev.id).order_by(EventResourceItem.code))
        return [resource_out(r, r.item) for r in rows]


def book_resource(ctx: Ctx, property_id: uuid.UUID, event_id: uuid.UUID,
                  body: s.EventResourceIn) -> s.EventResourceOut:
    """Book (or re-book with a new quantity) an item for the event's interval.

    Raises: NotFound (event). ValidationFailed: unknown item. Conflict: a CLOSED, CANCELLED
    or LOST event (invalid_transition); StockExhausted (409) while the event deducts.
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        ev = load_event(ctx, property_id, event_id, lock=True)
        EVENT_MACHINE.transition(ev.status, "edit")
        with body_reference("item_id", "no such event resource item", ctx):
            item = _lock_item(property_id, body.item_id)
        starts, ends = booked_interval(ev)
        if ev.status in EVENT_DEDUCTING:
            _check_stock(item, starts, ends, body.quantity, ev)
        res = EventResource.select().where((EventResource.event == ev.id)
                                           & (EventResource.item == item.id)).first()
        if res is None:
            res = EventResource.create(event=ev.id, item=item.id, quantity=body.quantity,
                                       starts=starts, ends=ends)
        else:
            res.quantity = body.quantity
            res.save()
        out = resource_out(res, item)
        ev.updated_at = ctx.now
        uow.record("event", "resource_booked", ev, to_data(out), property_id=property_id)
    return out


def release_resource(ctx: Ctx, property_id: uuid.UUID, event_id: uuid.UUID,
                     item_id: uuid.UUID) -> None:
    with lock_errors(), unit_of_work(ctx) as uow:
        ev = load_event(ctx, property_id, event_id, lock=True)
        EVENT_MACHINE.transition(ev.status, "edit")
        res = EventResource.select().where((EventResource.event == ev.id)
                                           & (EventResource.item == item_id)).first()
        if res is None:
            raise NotFound("the event has no booking of this item")
        item = _load_item(property_id, item_id)
        data = to_data(resource_out(res, item))
        EventResource.delete().where(EventResource.id == res.id).execute()
        uow.record("event", "resource_released", ev, data, property_id=property_id)


# -- posting --------------------------------------------------------------------------------------

def _posting_folio(ev: BanquetEvent) -> uuid.UUID:
    """Where an event posts: the folio named on it, else its block's master folio (opened now
    for a block made before it had one: the block row locked, after the event's; see
    pms.services.cashiering.master_folios). 422 folio_id when it has neither."""
    from pms.services.cashiering.master_folios import open_master_folio
    from pms.services.groups.room_blocks import load_block

    if ev.folio_id is not None:
        return ev.folio_id
    if ev.block_id is None:
        raise _invalid("folio_id", "the event names no folio and belongs to no block")
    block = load_block(ev.property_id, ev.block_id)
    if block.folio_id is None:
        block = load_block(ev.property_id, ev.block_id, lock=True)
        open_master_folio(block)
    return block.folio_id


def _first_posting(ev: BanquetEvent, resource_id: uuid.UUID, folio_id: uuid.UUID, qty: int,
                   amount: Decimal, code_name: str | None) -> EventPosting:
    """The (event, resource) posting row; its unique key refuses a second one (a post that
    raced past the event's lock: 409 event_posting_raced, its lines roll back with it)."""
    try:
        with db.atomic():
            return EventPosting.create(event=ev.id, resource_id=resource_id, folio_id=folio_id,
                                       posted_quantity=qty, posted_amount=amount,
                                       transaction_code=code_name)
    except peewee.IntegrityError as exc:
        raise Conflict("a concurrent post of this event posted this resource first; post "
                       "again to post any difference", code="event_posting_raced") from exc


def post_event(ctx: Ctx, property_id: uuid.UUID, event_id: uuid.UUID) -> s.EventPostResult:
    """Post an ACTUAL event's resources to the folio named on it, else to its block's master
    folio, idempotently per (event, resource): each posts the difference between what it costs
    now and what was posted (a correcting line: a charge, or an allowance when it went down).

    The event row is locked first, so two posts of one event serialize (PostgreSQL: FOR UPDATE;
    SQLite: the write lock) and the second sees the first's event_posting rows; the unique key
    (env_id, event_id, resource_id) of event_posting refuses a second row for one resource
    whatever the path (a raced insert fails: 409, nothing posted twice).

    Raises: NotFound. Conflict (409 event_not_actual) unless ACTUAL. ValidationFailed (422
    folio_id) when the event names no folio and has no block. FolioClosed (409) for a closed
    folio.
    """
    from pms.services.cashiering.cashiering import (
        load_folio,
        post_lines_with_tax,
        record_change,
        require_open,
    )
    from pms.services.cashiering.transaction_codes import code_or_none

    with lock_errors(), unit_of_work(ctx) as uow:
        ev = load_event(ctx, property_id, event_id, lock=True)
        if ev.status != EventStatus.ACTUAL:
            raise Conflict(f"only an ACTUAL event posts (this one is {ev.status})",
                           code="event_not_actual", status_now=ev.status)
        folio = load_folio(ctx, property_id, _posting_folio(ev), lock=True)
        require_open(folio)
        posted = {p.resource_id: p for p in EventPosting.select().where(
            EventPosting.event == ev.id)}
        pause = wiring.current().pause_after_check
        if pause is not None:  # TEST-ONLY: widen the window a concurrent post would need
            pause()
        resources = {r.id: r for r in EventResource.select(EventResource, EventResourceItem)
                     .join(EventResourceItem, on=(EventResource.item == EventResourceItem.id))
                     .where(EventResource.event == ev.id)}
        results = []
        for rid in sorted(set(posted) | set(resources), key=str):
            res, prior = resources.get(rid), posted.get(rid)
            if res is not None:
                item = res.item
                qty = units(res.quantity, bool(item.per_attendee), ev)  # ACTUAL: its actual covers
                amount = quantize(Decimal(str(item.unit_price)) * qty, folio.currency)
            else:
                item, qty, amount = None, 0, Decimal(0)
            done_qty = prior.posted_quantity if prior else 0
            done_amount = Decimal(str(prior.posted_amount)) if prior else Decimal(0)
            diff = quantize(amount - done_amount, folio.currency)
            if diff != 0:
                code_name = item.transaction_code if item else prior.transaction_code
                code = code_or_none(property_id, code_name) if code_name else None
                post_lines_with_tax(
                    folio, ctx, code, diff, quantity=max(abs(qty - done_qty), 1),
                    description=f"{ev.name}: {item.name if item else 'released resource'}",
                    kind="charge" if diff > 0 else "allowance",
                    category=code.category if code else "other",
                    reason=f"banquet event {ev.id}",
                    ledger_key=f"event:{ev.id}:{rid}",
                    memo=f"event {ev.id}")
                if prior is None:
                    prior = _first_posting(ev, rid, folio.id, qty, amount, code_name)
                else:
                    prior.posted_quantity, prior.posted_amount = qty, amount
                    prior.save()
            if prior is not None:
                results.append(s.EventPostingOut(
                    resource_id=rid, folio_id=prior.folio_id, posted_quantity=qty,
                    posted_amount=amount, posted_now=diff))
        out = s.EventPostResult(event_id=ev.id, folio_id=folio.id, postings=results)
        if any(p.posted_now != 0 for p in results):  # the folio's own change: its lines
            record_change(uow, folio, "charge_posted", reason=f"banquet event {ev.id}")
        ev.updated_at = ctx.now
        uow.record("event", "posted", ev, to_data(out), property_id=property_id)
    return out
