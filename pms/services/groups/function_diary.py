"""The catering manager's reads of time: the list of events, the function diary (events over
a window) and a function space's free slots. A space is busy where one of its elements
(itself, or the parts of a combination) is booked by a holding event (its setup and
tear-down included) or out of order; a combination is free only where every part is."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from pms.context import Ctx
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope
from pms.errors import ValidationFailed
from pms.models import BanquetEvent, FunctionSpace
from pms.models.banquets import SpaceBooking
from pms.schemas import banquets as s
from pms.services.catalog.catalog import load_property
from pms.services.groups.function_spaces import elements_of, load_space

MAX_WINDOW = timedelta(days=31)


def _check_window(from_at: datetime | None, to_at: datetime | None, *,
                  longest: timedelta | None = None) -> None:
    if from_at is not None and to_at is not None and to_at <= from_at:
        raise ValidationFailed("to_at must be after from_at",
                               errors=[{"field": "to_at", "message": "not after from_at"}])
    if longest is not None and from_at and to_at and to_at - from_at > longest:
        raise ValidationFailed(f"a window of at most {longest.days} days",
                               errors=[{"field": "to_at",
                                        "message": f"at most {longest.days} days after from_at"}])


def list_events(ctx: Ctx, property_id: uuid.UUID, query: s.BanquetEventQuery
                ) -> Page[BanquetEvent]:
    """A page of the property's events, by status, space and time window (the diary)."""
    with read_scope(ctx):
        load_property(property_id)
        select = BanquetEvent.select().where(BanquetEvent.property == property_id)
        if query.status is not None:
            select = select.where(BanquetEvent.status == query.status)
        if query.space_id is not None:
            select = select.where(BanquetEvent.space == query.space_id)
        select = in_window(select, query.from_at, query.to_at)
        return paginate(select, BanquetEvent, limit=query.limit, cursor=query.cursor)


def in_window(select: Any, from_at: datetime | None, to_at: datetime | None) -> Any:
    """Events whose [start_at, end_at) overlaps [from_at, to_at) (a bound left out is open).
    Raises ValidationFailed (422) when to_at is not after from_at."""
    _check_window(from_at, to_at)
    if from_at is not None:
        select = select.where(BanquetEvent.end_at > from_at)
    if to_at is not None:
        select = select.where(BanquetEvent.start_at < to_at)
    return select


def free_slots(ctx: Ctx, property_id: uuid.UUID, space_id: uuid.UUID,
               query: s.SpaceSlotsQuery) -> s.SpaceSlotsOut:
    """The space's busy intervals (bookings of its elements, out-of-order periods) and the
    free ones between them over [from_at, to_at). Raises NotFound, ValidationFailed."""
    start, end = query.from_at, query.to_at
    _check_window(start, end, longest=MAX_WINDOW)
    with read_scope(ctx):
        load_property(property_id)
        space = load_space(property_id, space_id)
        elements = elements_of(space)
        busy: list[s.SpaceBusyOut] = [
            s.SpaceBusyOut(start=max(b.starts, start), end=min(b.ends, end),
                           event_id=b.event_id, space_id=b.space_id, reason="event")
            for b in SpaceBooking.select().where(
                SpaceBooking.space_id.in_(elements) & (SpaceBooking.starts < end)
                & (SpaceBooking.ends > start))]
        parts = [space] + list(FunctionSpace.select().where(
            FunctionSpace.id.in_([e for e in elements if e != space.id])))
        for part in parts:
            for period in part.out_of_order or []:
                p_start = datetime.fromisoformat(period["start"])
                p_end = datetime.fromisoformat(period["end"])
                if p_start < end and p_end > start:
                    busy.append(s.SpaceBusyOut(start=max(p_start, start), end=min(p_end, end),
                                               event_id=None, space_id=part.id,
                                               reason="out_of_order"))
    busy.sort(key=lambda b: (b.start, b.end, str(b.space_id)))
    free, cursor = [], start
    for b in busy:
        if b.start > cursor:
            free.append(s.SpaceSlotOut(start=cursor, end=b.start))
        cursor = max(cursor, b.end)
    if cursor < end:
        free.append(s.SpaceSlotOut(start=cursor, end=end))
    return s.SpaceSlotsOut(space_id=space.id, from_at=start, to_at=end, busy=busy, free=free)
