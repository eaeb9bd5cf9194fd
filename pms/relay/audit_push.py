"""Audit push: journal rows to the bus as `hotel:pms:audit:recorded` CloudEvents.

The push has a destination of its own: routing key `audit.pms.recorded`, which no domain
consumer's `hotel.pms.#` binding matches (only the audit service binds it). And it carries the
journal row's who/what/when with the names of the fields that changed, never the before/after
rows themselves (names, email, phone, addresses, staff notes): the audit service reads the row
through the API when it needs the values.

Claimed by row lease like the outbox (pms.relay.claim): a short committed transaction leases
a batch to one relay, the publish happens outside any transaction, and only rows still leased by
that relay are stamped `pushed_at`. Two relays never push the same rows; a relay that dies
leaves its rows to the next one once the lease expires. Audit rows carry no per-aggregate order
on the bus, so they need no partitions. Fail open: a broker error or nobody taking audit rows
leaves them for a later sweep and never fails a request.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from pms.db.database import db
from pms.db.fields import utcnow
from pms.db.scope import unscoped
from pms.models.platform import AuditEntry
from pms.relay.clock import database_now
from pms.relay.core import (
    DEFAULT_LEASE_S,
    BrokerUnavailable,
    Publisher,
    PublishRejected,
    RelayResult,
    bookkeeping,
    new_owner,
    update_chosen,
)

AUDIT_ROUTING_KEY = "audit.pms.recorded"


def changed_fields(before: Any, after: Any) -> list[str]:
    """The top-level fields a change touched: every field of a created (or deleted) row, the
    fields whose values differ otherwise."""
    old = before if isinstance(before, dict) else {}
    new = after if isinstance(after, dict) else {}
    if not old or not new:
        return sorted(old or new)
    return sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))


def audit_event(row: Any) -> dict[str, Any]:
    """The CloudEvent of an audit-journal row (type hotel:pms:audit:recorded)."""
    created = row.created_at.astimezone(UTC)
    return {
        "specversion": "1.0", "id": str(row.id), "source": "hotel-pms",
        "type": "hotel:pms:audit:recorded", "subject": row.target_id,
        "time": created.isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json", "envid": str(row.env_id),
        "idempotencykey": f"audit:{row.id}",
        **({"propertyid": str(row.property_id)} if row.property_id else {}),
        "data": {"action": row.action, "target_type": row.target_type,
                 "target_id": row.target_id, "actor_sub": row.actor_sub,
                 "actor_kind": row.actor_kind, "request_id": row.request_id,
                 "changed_fields": changed_fields(row.before, row.after),
                 "reason": row.reason},
    }


def claim_audit(*, owner: str, limit: int, now: datetime, lease_s: float = DEFAULT_LEASE_S,
                env_id: uuid.UUID | None = None) -> list[Any]:
    """Lease the oldest unpushed audit rows nobody else holds (one short transaction)."""
    with unscoped():
        return _claim(owner=owner, limit=limit, now=now, lease_s=lease_s, env_id=env_id)


def _claim(*, owner: str, limit: int, now: datetime, lease_s: float,
           env_id: uuid.UUID | None) -> list[Any]:
    free = AuditEntry.lease_until.is_null() | (AuditEntry.lease_until <= now)
    where = AuditEntry.pushed_at.is_null() & free
    if env_id is not None:
        where &= AuditEntry.env_id == env_id
    with unscoped(), db.atomic():
        if not AuditEntry.select(AuditEntry.id).where(where).limit(1).exists():
            return []  # an idle poll takes no write lock (SQLite)
    candidates = (AuditEntry.select(AuditEntry.id).where(where)
                  .order_by(AuditEntry.created_at, AuditEntry.id).limit(limit))
    sets = {AuditEntry.lease_owner: owner,
            AuditEntry.lease_until: now + timedelta(seconds=lease_s)}
    with unscoped(), bookkeeping():
        rows = list(update_chosen(AuditEntry, AuditEntry.id, candidates, sets)
                    .returning(AuditEntry).execute())
    rows.sort(key=lambda r: (r.created_at, str(r.id)))
    return rows


def _publish(publisher: Publisher, events: list[dict[str, Any]],
             routing_key: str) -> list[Exception | None]:
    send_many = getattr(publisher, "send_many", None)
    if send_many is not None:
        # The first row alone probes whether anyone takes audit rows; if nobody does, the
        # sweep stops there instead of sending the whole batch back and forth every time.
        # Unlike the outbox's events, an audit row nobody takes is kept (require_route).
        messages = [publisher.message(e, routing_key=routing_key) for e in events]
        outcomes: list[Exception | None] = (send_many(messages[:1], require_route=True)
                                            if messages else [])
        if outcomes and outcomes[0] is None:
            outcomes += send_many(messages[1:], require_route=True)
        return outcomes
    outcomes = []
    for event in events:
        try:
            publisher.publish(event, routing_key=routing_key, require_route=True)
            outcomes.append(None)
        except (BrokerUnavailable, PublishRejected) as exc:
            outcomes.append(exc)
            break
    return outcomes


def push_audit_batch(publisher: Publisher, *, limit: int = 500,
                     routing_key: str = AUDIT_ROUTING_KEY, env_id: uuid.UUID | None = None,
                     owner: str | None = None, now: datetime | None = None,
                     lease_s: float = DEFAULT_LEASE_S) -> RelayResult:
    """Lease unpushed audit rows (oldest first), publish them, stamp `pushed_at` after the
    confirm, and release what did not go. `result.failed` counts rows nobody takes (the
    caller may wait before the next try: see workers/relay.py)."""
    owner = owner or new_owner()
    now = now or database_now()  # leases are compared across hosts
    result = RelayResult()
    rows = claim_audit(owner=owner, limit=limit, now=now, lease_s=lease_s, env_id=env_id)
    result.claimed = len(rows)
    if not rows:
        return result
    try:
        outcomes = _publish(publisher, [audit_event(r) for r in rows], routing_key)
    except Exception:
        _settle(owner, pushed=[], released=[r.id for r in rows])
        raise
    pushed = []
    for row, outcome in zip(rows, outcomes, strict=False):
        if outcome is None:
            pushed.append(row.id)
        elif isinstance(outcome, BrokerUnavailable):
            result.broker_error = result.broker_error or str(outcome) or "unavailable"
        else:
            # Nobody takes audit rows right now: fail open; a later sweep tries again.
            result.failed += 1
    done = set(pushed)
    _settle(owner, pushed=pushed, released=[r.id for r in rows if r.id not in done])
    result.published_ids = [str(i) for i in pushed]
    result.published = len(pushed)
    return result


def _settle(owner: str, *, pushed: list[Any], released: list[Any]) -> None:
    mine = AuditEntry.lease_owner == owner
    with unscoped(), bookkeeping():
        for start in range(0, len(pushed), 500):
            AuditEntry.update(pushed_at=utcnow(), lease_owner=None, lease_until=None).where(
                AuditEntry.id.in_(pushed[start:start + 500]) & mine).execute()
        for start in range(0, len(released), 500):
            AuditEntry.update(lease_owner=None, lease_until=None).where(
                AuditEntry.id.in_(released[start:start + 500]) & mine).execute()


__all__ = ["AUDIT_ROUTING_KEY", "audit_event", "changed_fields", "claim_audit", "push_audit_batch"]
