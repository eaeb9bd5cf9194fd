"""Sellable catalog: rate plans, items and packages."""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, JsonField, MoneyField
from pms.models.property import Property


class RatePlan(AggregateModel):
    # announced under several aggregates (its own, rates, restrictions, allotments or
    # inventory): each event takes its aggregate's stream version (UnitOfWork.emit)
    event_streams = True
    property = peewee.ForeignKeyField(Property, backref="rate_plans", on_delete="RESTRICT", index=False)
    code = peewee.CharField(max_length=32)
    name = peewee.CharField(max_length=200)
    description = peewee.TextField(null=True)
    negotiated = peewee.BooleanField(default=False)
    currency = peewee.CharField(max_length=3)
    cancellation_policy = JsonField(default=dict)
    no_show_policy = JsonField(default=dict)
    package_codes = JsonField(default=list)
    active = peewee.BooleanField(default=True)

    class Meta:
        table_name = "rate_plan"
        indexes = ((("env_id", "property", "code"), True),)


class Item(AggregateModel):
    property = peewee.ForeignKeyField(Property, backref="items", on_delete="RESTRICT", index=False)
    code = peewee.CharField(max_length=32)
    name = peewee.CharField(max_length=200)
    category = peewee.CharField(max_length=16)
    price = MoneyField()
    currency = peewee.CharField(max_length=3)

    class Meta:
        table_name = "item"
        indexes = ((("env_id", "property", "code"), True),)


class Package(AggregateModel):
    property = peewee.ForeignKeyField(Property, backref="packages", on_delete="RESTRICT", index=False)
    code = peewee.CharField(max_length=32)
    name = peewee.CharField(max_length=200)
    description = peewee.TextField(null=True)
    price = MoneyField()
    currency = peewee.CharField(max_length=3)
    calculation = peewee.CharField(max_length=32, default="PER_STAY")
    category = peewee.CharField(max_length=16, default="other")

    class Meta:
        table_name = "package"
        indexes = ((("env_id", "property", "code"), True),)
