"""Properties and their physical rooms."""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, JsonField


class Property(AggregateModel):
    # announced under several aggregates (its own, rates, restrictions, allotments or
    # inventory): each event takes its aggregate's stream version (UnitOfWork.emit)
    event_streams = True
    code = peewee.CharField(max_length=32)
    name = peewee.CharField(max_length=200)
    timezone = peewee.CharField(max_length=64)
    currency_code = peewee.CharField(max_length=3)
    languages = JsonField(default=list)
    display_address = JsonField(null=True)
    contacts = JsonField(null=True)
    business_date = peewee.DateField(null=True)
    # local "HH:MM" at which stays end (NULL: 11:00); digital keys end then
    check_out_time = peewee.CharField(max_length=5, null=True, default="11:00")
    # (migration 023): what one guest session may book here
    max_guest_bookings = peewee.IntegerField(default=5)
    booking_horizon_days = peewee.IntegerField(default=550)

    class Meta:
        table_name = "property"
        indexes = ((("env_id", "code"), True),)


class RoomType(AggregateModel):
    # announced under several aggregates (its own, rates, restrictions, allotments or
    # inventory): each event takes its aggregate's stream version (UnitOfWork.emit)
    event_streams = True
    property = peewee.ForeignKeyField(Property, backref="room_types", on_delete="RESTRICT", index=False)
    code = peewee.CharField(max_length=32)
    name = peewee.CharField(max_length=200)
    description = peewee.TextField(null=True)
    max_occupancy = peewee.IntegerField(default=2)
    sort_order = peewee.IntegerField(default=0)

    class Meta:
        table_name = "room_type"
        indexes = ((("env_id", "property", "code"), True),)


class Room(AggregateModel):
    property = peewee.ForeignKeyField(Property, backref="rooms", on_delete="RESTRICT", index=False)
    room_type = peewee.ForeignKeyField(RoomType, backref="rooms", on_delete="RESTRICT", index=False)
    room_number = peewee.CharField(max_length=16)
    floor = peewee.CharField(max_length=16, null=True)
    status = peewee.CharField(max_length=16, default="VACANT")
    hk_status = peewee.CharField(max_length=16, default="CLEAN")

    class Meta:
        table_name = "room"
        indexes = ((("env_id", "property", "room_number"), True),
                   (("env_id", "room_type"), False))
