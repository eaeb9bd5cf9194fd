"""Guest and company profiles."""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, JsonField


class Profile(AggregateModel):
    kind = peewee.CharField(max_length=16, default="GUEST")
    first_name = peewee.CharField(max_length=120, null=True)
    last_name = peewee.CharField(max_length=120, null=True)
    company_name = peewee.CharField(max_length=200, null=True)
    email = peewee.CharField(max_length=254, null=True)
    email_normalized = peewee.CharField(max_length=254, null=True)
    phone = peewee.CharField(max_length=40, null=True)
    external_ref = peewee.CharField(max_length=128, null=True)
    language = peewee.CharField(max_length=16, null=True)
    address = JsonField(null=True)
    preferences = JsonField(default=dict)
    loyalty_number = peewee.CharField(max_length=64, null=True)
    origin_property_id = peewee.UUIDField(null=True)
    # the purposes granted now: the newest consent record of each (pms.services.privacy.consents)
    consents = JsonField(null=True)

    class Meta:
        table_name = "profile"
        indexes = (
            (("env_id", "email_normalized"), True),
            (("env_id", "external_ref"), True),
            (("env_id", "last_name"), False),
        )
