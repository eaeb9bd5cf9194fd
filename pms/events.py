"""Event types and the CloudEvents 1.0 envelope (CONTRACT §4)."""

from __future__ import annotations

from datetime import UTC
from typing import Any

from pms.event_views import consumer_data

SOURCE = "hotel-pms"
SPECVERSION = "1.0"


def event_type(aggregate: str, action: str) -> str:
    return f"hotel:pms:{aggregate}:{action}"


def routing_key(type_: str) -> str:
    return type_.replace(":", ".")


def envelope(row: Any) -> dict[str, Any]:
    """The structured-mode CloudEvent of an outbox row; `data` as its type's consumer view.

    `aggregatetype` names the stream `aggregateversion` counts, with `subject`: a room type's
    own events, its `inventory` events and its `ari` events share the subject and are three
    streams, each rising by one, so a consumer dropping stale events keys by the pair."""
    time = row.time.astimezone(UTC)
    event: dict[str, Any] = {
        "specversion": SPECVERSION,
        "id": str(row.id),
        "source": row.source or SOURCE,
        "type": row.type,
        "subject": row.subject,
        "time": time.isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json",
        "envid": str(row.env_id),
        "idempotencykey": row.idempotency_key,
        "aggregatetype": row.aggregate_type,
        "aggregateversion": row.aggregate_version,
        "data": consumer_data(row.type, row.data),  # pms/event_views.py
    }
    if row.property_id:
        event["propertyid"] = str(row.property_id)
    if row.traceparent:
        event["traceparent"] = row.traceparent
    return event
