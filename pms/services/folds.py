"""Who made a row that a create folded into: read from the audit journal, which every
change writes in its own transaction and which is never purged."""

from __future__ import annotations

from typing import Any

from pms.context import Ctx
from pms.db.uow import read_scope
from pms.models.platform import AuditEntry


def made_by_caller(ctx: Ctx, row: Any, action: str) -> bool:
    """Whether the audit row of `action` on `row` (its creation) names the caller's `sub`."""
    with read_scope(ctx):
        creator = (AuditEntry.select(AuditEntry.actor_sub)
                   .where((AuditEntry.target_id == str(row.id)) & (AuditEntry.action == action))
                   .order_by(AuditEntry.created_at).first())
    return creator is not None and creator.actor_sub == ctx.sub
