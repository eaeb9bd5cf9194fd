"""Event resource items (equipment, menus) and their stock.

An item (scope `events`) has a stock, a unit price and a transaction code; a per-attendee item
(a menu) is counted per cover. An event books a quantity of an item over its interval
(pms.services.groups.event_resources); while the event deducts, the peak of overlapping
deducting bookings of the item never exceeds its stock (`peak_usage`, `_check_stock`: the item
row is locked first on PostgreSQL; SQLite's write lock serializes).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from msgspec import UNSET

from pms import wiring
from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope, unit_of_work
from pms.domain.money import quantize
from pms.domain.states import EVENT_DEDUCTING
from pms.errors import AlreadyExists, NotFound, StockExhausted
from pms.models import BanquetEvent, EventResource, EventResourceItem
from pms.schemas import banquets as s
from pms.schemas.common import to_data
from pms.services.catalog.catalog import load_property


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

