"""Kiosk configuration (issue 29): one row per property (unique in the database)."""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, JsonField
from pms.models.property import Property

DEFAULT_MAX_KEYS_PER_STAY = 2


class KioskConfig(AggregateModel):
    property = peewee.ForeignKeyField(Property, backref="kiosk_configs", on_delete="CASCADE",
                                      index=False)
    enabled_modes = JsonField(default=list)
    add_on_package_codes = JsonField(default=list)
    lockdown = peewee.BooleanField(default=False)
    max_keys_per_stay = peewee.IntegerField(default=DEFAULT_MAX_KEYS_PER_STAY)

    class Meta:
        table_name = "kiosk_config"
        indexes = ((("env_id", "property"), True),)
