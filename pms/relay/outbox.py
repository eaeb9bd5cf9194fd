"""The transactional outbox's services, by job (this module only re-exports them):

- pms.relay.sweep: partition leases, claim by row lease, publish, mark, park, reactions;
- pms.relay.audit_push: audit journal rows to the bus, claimed by lease too;
- pms.relay.operations: operator queries (status, list, replay selection, requeue, purge).
"""

from __future__ import annotations

from pms.relay.audit_push import audit_event, push_audit_batch
from pms.relay.operations import (
    EventFilter,
    OutboxStatus,
    event_summary,
    known_envs,
    list_events,
    outbox_status,
    purge_idempotency,
    purge_kiosk_sessions,
    purge_published,
    requeue,
    select_for_replay,
)
from pms.relay.sweep import (
    BASE_BACKOFF_S,
    DEFAULT_LEASE_S,
    MAX_ATTEMPTS,
    MAX_BACKOFF_S,
    BrokerUnavailable,
    Publisher,
    PublishRejected,
    RelayResult,
    Subscriber,
    compute_backoff,
    relay_batch,
)

__all__ = ["BASE_BACKOFF_S", "DEFAULT_LEASE_S", "MAX_ATTEMPTS", "MAX_BACKOFF_S",
           "BrokerUnavailable", "EventFilter", "OutboxStatus", "PublishRejected", "Publisher",
           "RelayResult", "Subscriber", "audit_event", "compute_backoff", "event_summary",
           "known_envs", "list_events", "outbox_status", "purge_idempotency", "purge_kiosk_sessions", "purge_published",
           "push_audit_batch", "relay_batch", "requeue", "select_for_replay"]
