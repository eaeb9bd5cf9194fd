"""Prices and selling rules per rate plan: nightly rate schedules, restrictions, promo codes."""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, JsonField, MoneyField, TenantModel
from pms.db.versioned import VersionedRows
from pms.models.catalog import RatePlan
from pms.models.property import Property, RoomType


class RateSchedule(VersionedRows, TenantModel):
    """The price of one room of a type for one night under one rate plan. Written only with an
    event of the plan in the same unit of work (pms.db.versioned): the availability search
    caches rates by the catalog version that event moves."""

    version_owner = ("rate_plan", "RatePlan")

    property = peewee.ForeignKeyField(Property, backref="rate_schedules",
                                      index=False, on_delete="CASCADE")
    rate_plan = peewee.ForeignKeyField(RatePlan, backref="rate_schedules",
                                       index=False, on_delete="CASCADE")
    room_type = peewee.ForeignKeyField(RoomType, backref="rate_schedules",
                                       index=False, on_delete="CASCADE")
    date = peewee.DateField()
    amount = MoneyField()
    currency = peewee.CharField(max_length=3)

    class Meta:
        table_name = "rate_schedule"
        indexes = (
            (("env_id", "rate_plan", "room_type", "date"), True),
            (("env_id", "property", "date"), False),
            (("env_id", "room_type"), False),
        )


class Restriction(TenantModel):
    """Selling rules for one date; a null rate plan or room type means "all of them"."""

    property = peewee.ForeignKeyField(Property, backref="restrictions",
                                      index=False, on_delete="CASCADE")
    rate_plan = peewee.ForeignKeyField(RatePlan, null=True, backref="restrictions",
                                       index=False, on_delete="CASCADE")
    room_type = peewee.ForeignKeyField(RoomType, null=True, backref="restrictions",
                                       index=False, on_delete="CASCADE")
    date = peewee.DateField()
    min_los = peewee.IntegerField(null=True)
    max_los = peewee.IntegerField(null=True)
    # a length of stay required of every stay that spends this night (min_los and
    # max_los are the channels' min_stay_arrival and max_stay_arrival: counted on arrival)
    min_stay_through = peewee.IntegerField(null=True)
    max_stay_through = peewee.IntegerField(null=True)
    closed = peewee.BooleanField(default=False)
    closed_to_arrival = peewee.BooleanField(default=False)
    closed_to_departure = peewee.BooleanField(default=False)

    class Meta:
        table_name = "restriction"
        indexes = ((("env_id", "property", "date"), False),)


class RatePlanAllotment(TenantModel):
    """the allotment of a rate plan for one room type and night: at most `allotment`
    rooms of the type are sold on the plan that night (the channels' per-rate-plan allotment,
    distinct from the room type's sell limit, `InventoryDay.sell_limit`). What the plan has
    sold is not stored: it is its live reservations of the type that spend the night
    (`pms.domain.availability.ALLOTMENT_STATUSES`), counted under the booking's night locks
    (`pms.services.inventory.allotments`), so a cancel or a no-show gives the allotment back."""

    property = peewee.ForeignKeyField(Property, backref="allotments",
                                      index=False, on_delete="CASCADE")
    rate_plan = peewee.ForeignKeyField(RatePlan, backref="allotments",
                                       index=False, on_delete="CASCADE")
    room_type = peewee.ForeignKeyField(RoomType, backref="allotments",
                                       index=False, on_delete="CASCADE")
    date = peewee.DateField()
    allotment = peewee.IntegerField()
    # null: a cap only; N: the plan's unsold rooms are also held for it (refused to every
    # other sale) until N days before the night, judged against the business date
    # (pms.domain.availability.channel_hold; migration 074)
    release_days = peewee.IntegerField(null=True)

    class Meta:
        table_name = "rate_plan_allotment"
        indexes = (
            (("env_id", "rate_plan", "room_type", "date"), True),
            (("env_id", "property", "date"), False),
            (("env_id", "room_type"), False),
        )


class PromoCode(AggregateModel):
    """A discount code of a property: PERCENT of the room total or a FIXED amount per stay."""

    property = peewee.ForeignKeyField(Property, backref="promo_codes",
                                      index=False, on_delete="CASCADE")
    code = peewee.CharField(max_length=32)
    description = peewee.TextField(null=True)
    discount_type = peewee.CharField(max_length=8)
    discount_value = MoneyField()
    currency = peewee.CharField(max_length=3, null=True)
    valid_from = peewee.DateField(null=True)
    valid_to = peewee.DateField(null=True)
    min_nights = peewee.IntegerField(null=True)
    rate_plan_ids = JsonField(default=list)
    active = peewee.BooleanField(default=True)

    class Meta:
        table_name = "promo_code"
        indexes = ((("env_id", "property", "code"), True),)
