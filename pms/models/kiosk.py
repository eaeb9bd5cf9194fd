"""Kiosk configuration: one row per property (unique in the database)."""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, JsonField, TenantModel, UtcDateTimeField
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


class KioskTerminal(AggregateModel):
    """A lobby terminal, one row per env and token `sub`: its failed-lookup budget.

    `failures` counts the misses since `window_started_at`; at the budget the terminal is
    refused until `blocked_until` (429 with Retry-After). Kept in the database, not in a
    process, so every web host behind the gateway sees the same count.
    """

    terminal = peewee.CharField(max_length=200)
    # the property the terminal serves, bound at its first lookup (migration 050)
    property_id = peewee.UUIDField(null=True)
    failures = peewee.IntegerField(default=0)
    window_started_at = UtcDateTimeField(null=True)
    blocked_until = UtcDateTimeField(null=True)
    lookups = peewee.IntegerField(default=0)

    class Meta:
        table_name = "kiosk_terminal"
        indexes = ((("env_id", "terminal"), True),)


class KioskSession(TenantModel):
    """What a kiosk lookup returned: a session bound to the terminal (`sub`), the
    property and the reservation, presented as `X-Kiosk-Session`. Only the token's SHA-256 is
    stored. Every lookup writes one row (a miss one already ended, bound to no reservation, its
    token never shown), so a miss and a hit run the same statements."""

    terminal = peewee.CharField(max_length=200)
    property = peewee.ForeignKeyField(Property, on_delete="CASCADE", index=False)
    reservation_id = peewee.UUIDField(null=True)
    token_digest = peewee.CharField(max_length=64)
    last_seen_at = UtcDateTimeField()
    ended_at = UtcDateTimeField(null=True)

    class Meta:
        table_name = "kiosk_session"
        indexes = ((("env_id", "token_digest"), True),
                   (("env_id", "terminal", "created_at"), False))
