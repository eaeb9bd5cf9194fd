"""Reservations and what hangs off them: comments, messages, service requests, and the room-stay
table that keeps one physical room from being held by two stays on overlapping nights.

Only fields and indexes live here; status changes go through `pms.domain.states`.
"""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, JsonField, MoneyField, TenantModel, UtcDateTimeField
from pms.models.catalog import RatePlan
from pms.models.profiles import Profile
from pms.models.property import Property, Room, RoomType


class Reservation(AggregateModel):
    property = peewee.ForeignKeyField(Property, index=False, backref="reservations", on_delete="RESTRICT")
    room_type = peewee.ForeignKeyField(RoomType, index=False, backref="reservations", on_delete="RESTRICT")
    rate_plan = peewee.ForeignKeyField(RatePlan, index=False, backref="reservations", on_delete="RESTRICT")
    guest_profile = peewee.ForeignKeyField(Profile, index=False, backref="reservations", null=True,
                                           on_delete="RESTRICT")
    confirmation_number = peewee.CharField(max_length=64)
    status = peewee.CharField(max_length=16)
    arrival_date = peewee.DateField()
    departure_date = peewee.DateField()
    adults = peewee.IntegerField(default=1)
    children = peewee.IntegerField(default=0)
    source = peewee.CharField(max_length=16, default="DIRECT")
    channel = peewee.CharField(max_length=16, default="WEB")
    guest_first_name = peewee.CharField(max_length=120, null=True)
    guest_last_name = peewee.CharField(max_length=120, null=True)
    guest_last_name_normalized = peewee.CharField(max_length=120, null=True)
    room = peewee.ForeignKeyField(Room, index=False, backref="reservations", null=True, on_delete="RESTRICT")
    currency = peewee.CharField(max_length=3)
    room_total = MoneyField(default=0)
    packages_total = MoneyField(default=0)
    discount_total = MoneyField(default=0)
    total_amount = MoneyField(default=0)
    nightly_prices = JsonField(default=list)
    promo_code = peewee.CharField(max_length=64, null=True)
    registration = JsonField(null=True)
    pre_checked_in_at = UtcDateTimeField(null=True)
    cancellation_fee = MoneyField(null=True)
    no_show_fee = MoneyField(null=True)
    cancelled_at = UtcDateTimeField(null=True)
    checked_in_at = UtcDateTimeField(null=True)
    checked_out_at = UtcDateTimeField(null=True)
    checked_in_business_date = peewee.DateField(null=True)
    checked_out_business_date = peewee.DateField(null=True)
    split_from = peewee.UUIDField(null=True)
    notes = peewee.TextField(null=True)
    block_id = peewee.UUIDField(null=True)  # picked up from a room block
    # a company_billing row exists (migration 040): check-out reads no routing otherwise
    company_billed = peewee.BooleanField(default=False)
    # a late check-out: the local "HH:MM" the stay leaves on its departure date (its keys end
    # then), else the property's check-out time (migration 058)
    departure_time = peewee.CharField(max_length=5, null=True)
    # the company the stay is booked for, billed to it or not (migration 066): a negotiated
    # rate's company, a company user's booking, a stay routed to a company
    company_profile_id = peewee.UUIDField(null=True)

    class Meta:
        table_name = "reservation"
        indexes = (
            (("env_id", "confirmation_number"), True),
            (("env_id", "property", "arrival_date"), False),
            (("env_id", "property", "status"), False),
            (("env_id", "guest_profile"), False),
            (("env_id", "guest_last_name_normalized"), False),
            (("env_id", "created_at"), False),
            # a rate plan's rooms sold on a night (its allotment, migration 043)
            (("env_id", "rate_plan", "room_type", "arrival_date"), False),
            # a company's production and its users' bookings (migration 066)
            (("env_id", "company_profile_id", "arrival_date"), False),
        )


class RoomStay(TenantModel):
    """A physical room held by a stay for [start_date, end_date). On PostgreSQL an exclusion
    constraint (btree_gist) refuses two overlapping rows for one room; the services check the
    same rule first so SQLite (single writer) answers the same 409."""

    reservation = peewee.ForeignKeyField(Reservation, index=False, backref="room_stays", on_delete="CASCADE")
    property = peewee.ForeignKeyField(Property, index=False, on_delete="RESTRICT")
    room = peewee.ForeignKeyField(Room, index=False, backref="stays", on_delete="RESTRICT")
    start_date = peewee.DateField()
    end_date = peewee.DateField()

    class Meta:
        table_name = "room_stay"
        indexes = (
            (("env_id", "room", "start_date"), False),
            (("env_id", "reservation"), False),
        )


class ReservationComment(AggregateModel):
    reservation = peewee.ForeignKeyField(Reservation, index=False, backref="comments", on_delete="CASCADE")
    property = peewee.ForeignKeyField(Property, index=False, on_delete="RESTRICT")
    text = peewee.TextField()
    author_sub = peewee.CharField(max_length=255)
    internal = peewee.BooleanField(default=True)

    class Meta:
        table_name = "reservation_comment"
        indexes = ((("env_id", "reservation", "created_at"), False),)


class ReservationMessage(AggregateModel):
    reservation = peewee.ForeignKeyField(Reservation, index=False, backref="messages", on_delete="CASCADE")
    property = peewee.ForeignKeyField(Property, index=False, on_delete="RESTRICT")
    direction = peewee.CharField(max_length=16)
    status = peewee.CharField(max_length=16)
    channel = peewee.CharField(max_length=16, default="EMAIL")
    subject = peewee.CharField(max_length=200, null=True)
    body = peewee.TextField()
    sent_at = UtcDateTimeField(null=True)
    attempts = peewee.IntegerField(default=0)
    last_error = peewee.TextField(null=True)

    class Meta:
        table_name = "reservation_message"
        indexes = ((("env_id", "reservation", "created_at"), False),
                   (("env_id", "status"), False))


class ServiceRequest(AggregateModel):
    reservation = peewee.ForeignKeyField(Reservation, index=False, backref="service_requests",
                                         on_delete="CASCADE")
    property = peewee.ForeignKeyField(Property, index=False, on_delete="RESTRICT")
    kind = peewee.CharField(max_length=32)
    description = peewee.TextField(null=True)
    status = peewee.CharField(max_length=16)
    due_at = UtcDateTimeField(null=True)

    class Meta:
        table_name = "service_request"
        indexes = ((("env_id", "reservation", "created_at"), False),)
