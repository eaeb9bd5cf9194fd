"""Banquet events and their state machine.

An event (scope `events`) is born INQUIRY and moved by EVENT_MACHINE (pms/domain/states.py). In
a deducting state (TENTATIVE, DEFINITE, ACTUAL: EVENT_DEDUCTING) it holds its function space
(pms.services.groups.function_spaces) and its resources' stock
(pms.services.groups.event_stock) over [start - setup, end + tear-down); INQUIRY holds nothing
(a mere request), CLOSED, CANCELLED and LOST release. Attendees (forecast, guaranteed, actual)
must fit the chosen setup's capacity (422). An event linked to a room block lies within the
block's dates, give or take BLOCK_SHOULDER_DAYS.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from msgspec import UNSET

from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.domain.states import EVENT_DEDUCTING, EVENT_INITIAL, EVENT_MACHINE, EventStatus
from pms.errors import Conflict, NotFound
from pms.models import BanquetEvent, EventPosting, EventResource, FunctionSpace, SpaceBooking
from pms.schemas import banquets as s
from pms.schemas.common import to_data
from pms.services.catalog.catalog import load_property
from pms.services.groups.event_stock import _check_stock, _lock_item
from pms.services.groups.function_spaces import _invalid, book_space, booked_interval, load_space
from pms.services.references import body_reference

EDITABLE = frozenset({EventStatus.INQUIRY, EventStatus.TENTATIVE, EventStatus.DEFINITE,
                      EventStatus.ACTUAL})


TRIGGERS = ("tentative", "definite", "actual", "close", "cancel", "lose")


def event_out(row: BanquetEvent) -> s.BanquetEventOut:
    return s.BanquetEventOut(
        id=row.id, property_id=row.property_id, space_id=row.space_id, block_id=row.block_id,
        folio_id=row.folio_id, name=row.name, status=row.status, setup_style=row.setup_style,
        start_at=row.start_at, end_at=row.end_at, setup_minutes=row.setup_minutes,
        teardown_minutes=row.teardown_minutes, attendees_forecast=row.attendees_forecast,
        attendees_guaranteed=row.attendees_guaranteed, attendees_actual=row.attendees_actual,
        version=row.version, created_at=row.created_at, updated_at=row.updated_at)


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


def _rebook(row: BanquetEvent, space: FunctionSpace) -> None:
    """Write the event's space bookings for its state and interval (none unless deducting),
    then re-check its resources' stock."""
    SpaceBooking.delete().where(SpaceBooking.event == row.id).execute()
    starts, ends = booked_interval(row)
    EventResource.update(starts=starts, ends=ends).where(EventResource.event == row.id).execute()
    if row.status not in EVENT_DEDUCTING:
        return
    book_space(row, space, starts, ends)
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

