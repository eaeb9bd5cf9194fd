"""Per-env set-up state (from platform service-updated events) and the embedded email
sandbox's outbox of sent mail (so `pms-cli email list` can show it across processes)."""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, JsonField, TenantModel, UtcDateTimeField


class EnvironmentSetup(AggregateModel):
    """One row per env: its defaults, and whether the ledger settlement accounts exist yet."""

    initialized_at = UtcDateTimeField()
    source_event_id = peewee.CharField(max_length=128, null=True)
    lists_of_values = JsonField(default=dict)
    module_settings = JsonField(default=dict)
    ledger_accounts_ready = peewee.BooleanField(default=False)
    ledger_accounts = JsonField(null=True)
    last_error = peewee.TextField(null=True)
    events_seen = peewee.IntegerField(default=1)

    class Meta:
        table_name = "environment_setup"
        indexes = ((("env_id",), True),)


class SandboxEmail(TenantModel):
    """A message the embedded email sandbox 'sent' (PMS_PLATFORM_URL=embedded only)."""

    message_id = peewee.CharField(max_length=64)
    idempotency_key = peewee.CharField(max_length=200)
    to = peewee.CharField(max_length=254)
    subject = peewee.CharField(max_length=300)
    body = peewee.TextField()
    template = peewee.CharField(max_length=60, null=True)
    meta = JsonField(null=True)

    class Meta:
        table_name = "sandbox_email"
        indexes = ((("env_id", "idempotency_key"), True), (("env_id", "created_at"), False))
