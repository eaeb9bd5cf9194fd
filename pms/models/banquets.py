"""Banquet events on function spaces.

FunctionSpace: a room for events with its capacity per setup style; a combination lists its
element spaces (`element_ids`; an element's list is empty) and booking it books every element.
Out-of-order periods are kept on the space (`out_of_order`: [{start, end, reason}]).

BanquetEvent: one event in one space. `block_id` names the room block it belongs to (a column,
not a foreign key: the block's delete refuses while events link to it, 409 block_has_events);
the event posts to the folio named on it (`folio_id`), else to its block's master folio.

SpaceBooking: one row per element space an event in a deducting state (TENTATIVE, DEFINITE,
ACTUAL) holds, over [start - setup, end + tear-down). On PostgreSQL an exclusion constraint
(btree_gist, migration 029) forbids two overlapping rows of one element; on SQLite the service
checks under the write lock.

EventResourceItem: equipment or a menu with its stock at the property; EventResource: an event's
booking of a quantity of one item over the event's booked interval; EventPosting: what was
posted to the folio per (event, resource), so a posting is idempotent and posts differences.
"""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, TenantModel
from pms.db.fields import JsonField, MoneyField, UtcDateTimeField
from pms.models.property import Property


class FunctionSpace(AggregateModel):
    property = peewee.ForeignKeyField(Property, backref="function_spaces", on_delete="RESTRICT",
                                      index=False)
    name = peewee.CharField(max_length=200)
    capacities = JsonField()          # {"THEATRE": 120, ...}
    element_ids = JsonField()         # [] for an element space; element ids for a combination
    out_of_order = JsonField()        # [{"start": iso, "end": iso, "reason": str}]
    rental_price = MoneyField(null=True)  # the space's own charge per event (null: none)
    rental_transaction_code = peewee.CharField(max_length=32, null=True)

    class Meta:
        table_name = "function_space"
        indexes = ((("env_id", "property", "name"), True),)


class BanquetEvent(AggregateModel):
    property = peewee.ForeignKeyField(Property, backref="banquet_events", on_delete="RESTRICT",
                                      index=False)
    space = peewee.ForeignKeyField(FunctionSpace, backref="events", on_delete="RESTRICT",
                                   index=False)
    block_id = peewee.UUIDField(null=True)  # its room block (see the module docstring)
    folio_id = peewee.UUIDField(null=True)
    name = peewee.CharField(max_length=200)
    status = peewee.CharField(max_length=16)
    setup_style = peewee.CharField(max_length=16)
    start_at = UtcDateTimeField()
    end_at = UtcDateTimeField()
    setup_minutes = peewee.IntegerField(default=0)
    teardown_minutes = peewee.IntegerField(default=0)
    attendees_forecast = peewee.IntegerField()
    attendees_guaranteed = peewee.IntegerField(null=True)
    attendees_actual = peewee.IntegerField(null=True)

    class Meta:
        table_name = "banquet_event"
        indexes = ((("env_id", "property", "start_at"), False), (("env_id", "space"), False))


class SpaceBooking(TenantModel):
    event = peewee.ForeignKeyField(BanquetEvent, backref="space_bookings", on_delete="CASCADE",
                                   index=False)
    space_id = peewee.UUIDField()  # an element space
    starts = UtcDateTimeField()
    ends = UtcDateTimeField()

    class Meta:
        table_name = "function_space_booking"
        indexes = ((("env_id", "space_id", "starts"), False), (("env_id", "event"), False))


class EventResourceItem(AggregateModel):
    property = peewee.ForeignKeyField(Property, backref="event_resource_items",
                                      on_delete="RESTRICT", index=False)
    code = peewee.CharField(max_length=32)
    name = peewee.CharField(max_length=200)
    kind = peewee.CharField(max_length=16)  # EQUIPMENT | MENU
    stock = peewee.IntegerField()
    unit_price = MoneyField()
    per_attendee = peewee.BooleanField(default=False)
    transaction_code = peewee.CharField(max_length=32)

    class Meta:
        table_name = "event_resource_item"
        indexes = ((("env_id", "property", "code"), True),)


class EventResource(TenantModel):
    event = peewee.ForeignKeyField(BanquetEvent, backref="resources", on_delete="CASCADE",
                                   index=False)
    item = peewee.ForeignKeyField(EventResourceItem, backref="bookings", on_delete="RESTRICT",
                                  index=False)
    quantity = peewee.IntegerField()
    starts = UtcDateTimeField()
    ends = UtcDateTimeField()

    class Meta:
        table_name = "event_resource"
        indexes = ((("env_id", "event", "item"), True), (("env_id", "item", "starts"), False))


class EventPosting(TenantModel):
    event = peewee.ForeignKeyField(BanquetEvent, backref="postings", on_delete="RESTRICT",
                                   index=False)
    resource_id = peewee.UUIDField()
    folio_id = peewee.UUIDField()
    posted_quantity = peewee.IntegerField()
    posted_amount = MoneyField()
    transaction_code = peewee.CharField(max_length=32, null=True)

    class Meta:
        table_name = "event_posting"
        indexes = ((("env_id", "event", "resource_id"), True),)
