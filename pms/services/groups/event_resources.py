"""An event's resources: the quantity of an item (equipment, a menu) it books over its
interval, re-booked with a new quantity or released; stock is checked while the event deducts
(pms.services.groups.event_stock).
"""

from __future__ import annotations

import uuid

from pms.context import Ctx
from pms.db.locking import lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.domain.states import EVENT_DEDUCTING, EVENT_MACHINE
from pms.errors import NotFound
from pms.models import EventResource, EventResourceItem
from pms.schemas import banquets as s
from pms.schemas.common import to_data
from pms.services.groups.banquet_events import load_event
from pms.services.groups.event_stock import _check_stock, _load_item, _lock_item, resource_out
from pms.services.groups.function_spaces import booked_interval
from pms.services.references import body_reference


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

