"""A fiscal document's state at its fiscal provider (migration 070). Fields and indexes only."""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, UtcDateTimeField


class Fiscalization(AggregateModel):
    """One row per fiscal document: `id` is the document's id (the provider's idempotency key).
    The provider's answer (signature, counter, signing time) is kept here, never in the
    document, whose content is frozen at issue."""

    property_id = peewee.UUIDField()
    kind = peewee.CharField(max_length=16)
    number = peewee.CharField(max_length=64)
    state = peewee.CharField(max_length=20)
    provider = peewee.CharField(max_length=32)
    attempts = peewee.IntegerField(default=0)
    last_error = peewee.CharField(max_length=500, null=True)
    submitted_at = UtcDateTimeField(null=True)
    signature = peewee.CharField(max_length=128, null=True)
    signature_counter = peewee.IntegerField(null=True)
    signed_at = UtcDateTimeField(null=True)
    transaction_ref = peewee.CharField(max_length=64, null=True)

    class Meta:
        table_name = "fiscalization"
        indexes = ((("env_id", "property_id", "state"), False),)
