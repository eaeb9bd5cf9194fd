"""Housekeeping of Idempotency-Key records: the periodic purge of expired ones.

The records themselves are claimed and stored by the API's middleware (pms.api.idempotency);
this module exists so that services (the outbox housekeeping) never import the API layer.
"""

from __future__ import annotations

from typing import Any

from pms.db.database import db
from pms.db.scope import tenant_scope
from pms.models.platform import IdempotencyRecord


def purge_expired(ctx: Any) -> int:
    """Delete the env's expired records (periodic job, run per env). Returns how many."""
    with tenant_scope(ctx.env_id), db.atomic():
        return int(IdempotencyRecord.delete().where(
            IdempotencyRecord.expires_at <= ctx.now).execute())
