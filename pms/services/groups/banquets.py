"""Banquet events on function spaces: one name for the capability's use cases.

The code lives by concern:

- `function_spaces`: the spaces (capacity per setup style, combinations of element spaces),
  their out-of-order periods, and the bookings that hold them (no double booking);
- `banquet_events`: the events and their state machine (EVENT_MACHINE), which holds or
  releases the space and the stock;
- `event_stock`: resource items (equipment, menus) and their stock over time;
- `event_resources`: what an event books of an item;
- `event_posting`: an ACTUAL event's charges, posted through pms.services.cashiering.posting.

Callers (the API resources, tests, the simulation) may keep calling `banquets.<name>`; the
names below are the modules' own.
"""

from __future__ import annotations

from pms.services.groups.banquet_events import (
    BLOCK_SHOULDER_DAYS,
    DELETABLE_EVENTS,
    EDITABLE,
    TRIGGERS,
    create_event,
    delete_event,
    event_out,
    get_event,
    load_event,
    transition,
    update_event,
)
from pms.services.groups.event_posting import post_event
from pms.services.groups.event_resources import book_resource, list_resources, release_resource
from pms.services.groups.event_stock import (
    covers,
    create_item,
    item_out,
    list_items,
    peak_usage,
    resource_out,
    units,
    update_item,
)
from pms.services.groups.function_spaces import (
    MAX_EVENTS_NAMED,
    book_space,
    booked_interval,
    create_space,
    delete_space,
    elements_of,
    get_space,
    list_spaces,
    load_space,
    overlapping_booking,
    space_out,
    update_space,
)

__all__ = [
    "BLOCK_SHOULDER_DAYS", "DELETABLE_EVENTS", "EDITABLE", "MAX_EVENTS_NAMED", "TRIGGERS",
    "book_resource", "book_space", "booked_interval", "covers", "create_event", "create_item",
    "create_space", "delete_event", "delete_space", "elements_of", "event_out", "get_event",
    "get_space", "item_out", "list_items", "list_resources", "list_spaces", "load_event",
    "load_space", "overlapping_booking", "peak_usage", "post_event", "release_resource",
    "resource_out", "space_out", "transition", "units", "update_event", "update_item",
    "update_space",
]
