"""Cross-cutting tables: outbox, audit journal, idempotency records, async jobs."""

from __future__ import annotations

import zlib
from typing import Any

import peewee

from pms.db.base import JsonField, TenantModel, UtcDateTimeField, utcnow

# Outbox rows are spread over this many partitions by their aggregate id; a partition is worked
# by at most one live relay at a time (pms.relay.sweep). Changing it reshuffles in-flight order.
OUTBOX_PARTITIONS = 64


def outbox_partition(subject: str) -> int:
    """The partition of an aggregate: a stable hash (crc32, the same in every process and
    Python version, unlike `hash()`) of its id."""
    return zlib.crc32(str(subject).encode()) % OUTBOX_PARTITIONS


class OutboxEvent(TenantModel):
    """One CloudEvent waiting for (or done with) the relay. `id` is the event id.

    Lifecycle: pending (published_at NULL) -> leased by one relay (lease_owner, lease_until) ->
    published, or back off (attempts, next_attempt_at), or parked after too many attempts
    (parked_at: not due until replayed). After the bus publish, the internal subscribers' own
    cursor: dispatched_at (done), dispatch_next_at (due; NULL with dispatched_at NULL = parked).
    """

    # PostgreSQL: inserted through `pms_write_outbox_event` (migration 017), whose INSERT plan
    # the server keeps per connection; a new column needs a migration that
    # replaces the function
    _insert_function = "pms_write_outbox_event"

    type = peewee.CharField(max_length=120)
    source = peewee.CharField(max_length=60, default="hotel-pms")
    subject = peewee.CharField(max_length=64)
    aggregate_type = peewee.CharField(max_length=60)
    aggregate_version = peewee.IntegerField()
    property_id = peewee.UUIDField(null=True)
    idempotency_key = peewee.CharField(max_length=255)
    time = UtcDateTimeField(default=utcnow)
    data = JsonField()
    traceparent = peewee.CharField(max_length=64, null=True)
    request_id = peewee.CharField(max_length=128, null=True)
    published_at = UtcDateTimeField(null=True)
    attempts = peewee.IntegerField(default=0)
    next_attempt_at = UtcDateTimeField(default=utcnow)
    last_error = peewee.TextField(null=True)
    partition = peewee.IntegerField(default=0)
    lease_owner = peewee.CharField(max_length=64, null=True)
    lease_until = UtcDateTimeField(null=True)
    parked_at = UtcDateTimeField(null=True)
    dispatched_at = UtcDateTimeField(null=True)
    dispatch_attempts = peewee.IntegerField(default=0)
    dispatch_next_at = UtcDateTimeField(null=True)

    @classmethod
    def create(cls, **query: Any) -> OutboxEvent:
        # The partition is derived, never chosen: every writer (uow.emit) gets it filled here.
        query.setdefault("partition", outbox_partition(query.get("subject", "")))
        return super().create(**query)

    class Meta:
        table_name = "outbox_event"
        indexes = (
            (("env_id", "created_at"), False),
            (("env_id", "subject", "aggregate_version"), False),
        )


class EventStream(TenantModel):
    """The version counter of one event stream of a row announced under several aggregates
    (a rate plan's `rate_schedule` events, a room type's `inventory` events; migration 057):
    one row per (aggregate, subject), bumped under its row lock by `UnitOfWork.emit`."""

    aggregate = peewee.CharField(max_length=60)
    subject = peewee.UUIDField()
    version = peewee.IntegerField(default=0)

    class Meta:
        table_name = "event_stream"
        indexes = ((("env_id", "aggregate", "subject"), True),)


class AuditEntry(TenantModel):
    """Append-only journal: who did what to which row, before and after, in which request."""

    # PostgreSQL: inserted through `pms_write_audit_entry` (migration 017), whose INSERT plan
    # the server keeps per connection; a new column needs a migration that
    # replaces the function
    _insert_function = "pms_write_audit_entry"

    action = peewee.CharField(max_length=120)
    target_type = peewee.CharField(max_length=60)
    target_id = peewee.CharField(max_length=64)
    property_id = peewee.UUIDField(null=True)
    actor_sub = peewee.CharField(max_length=255)
    actor_kind = peewee.CharField(max_length=32)
    request_id = peewee.CharField(max_length=128, null=True)
    before = JsonField(null=True)
    after = JsonField(null=True)
    reason = peewee.TextField(null=True)
    pushed_at = UtcDateTimeField(null=True)
    lease_owner = peewee.CharField(max_length=64, null=True)  # the relay pushing it now
    lease_until = UtcDateTimeField(null=True)

    class Meta:
        table_name = "audit_entry"
        indexes = ((("env_id", "target_id", "created_at"), False),
                   (("env_id", "created_at"), False))


class IdempotencyRecord(TenantModel):
    """A POST's Idempotency-Key: its request fingerprint and, once done, its response."""

    # PostgreSQL: inserted through `pms_write_idempotency_record` (migration 017), whose INSERT plan
    # the server keeps per connection; a new column needs a migration that
    # replaces the function
    _insert_function = "pms_write_idempotency_record"

    key = peewee.CharField(max_length=300)  # the caller's digest and the client's key (023)
    fingerprint = peewee.CharField(max_length=128)
    state = peewee.CharField(max_length=16, default="running")
    response_status = peewee.IntegerField(null=True)
    response_body = peewee.TextField(null=True)
    response_headers = JsonField(null=True)
    expires_at = UtcDateTimeField()
    request_id = peewee.CharField(max_length=128, null=True)  # the claimant's X-Request-Id

    class Meta:
        table_name = "idempotency_record"
        indexes = ((("env_id", "key"), True), (("env_id", "expires_at"), False))


class Job(TenantModel):
    """An asynchronous job (night audit, reports): input, status and result."""

    kind = peewee.CharField(max_length=60)
    status = peewee.CharField(max_length=16, default="QUEUED")
    property_id = peewee.UUIDField(null=True)
    input = JsonField(null=True)
    result = JsonField(null=True)
    error = peewee.TextField(null=True)
    started_at = UtcDateTimeField(null=True)
    finished_at = UtcDateTimeField(null=True)

    class Meta:
        table_name = "job"
        indexes = ((("env_id", "created_at"), False),)
