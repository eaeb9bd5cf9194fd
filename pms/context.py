"""The request (or message) context: who acts, in which tenant env, with which scopes.

Services take `ctx` explicitly; the ContextVar here only carries the active tenant scope for the
tenant base model (`pms.db.scope`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime


@dataclass(frozen=True)
class Ctx:
    """Who is acting, for which env, and when."""

    env_id: uuid.UUID
    sub: str = "system"
    client_kind: str = "machine"
    holder_id: uuid.UUID | None = None
    scopes: frozenset[str] = frozenset()
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    traceparent: str | None = None
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    idempotency_key: str | None = None
    # the server's id of this request's Idempotency-Key claim (its record's id), when the key
    # was claimed in a transaction of its own: the first committed change marks the record
    idempotency_claim: uuid.UUID | None = None
    # the X-Kiosk-Session a kiosk token presented (None for every other kind); the
    # kiosk actions (pms.services.kiosk.kiosk_sessions.admit) check it against the stored session
    kiosk_session: str | None = None

    def with_(self, **changes: object) -> Ctx:
        return replace(self, **changes)  # type: ignore[arg-type]


def system_ctx(env_id: uuid.UUID, *, sub: str = "system", request_id: str | None = None) -> Ctx:
    """A context for workers and the CLI: a machine actor inside one env."""
    return Ctx(env_id=env_id, sub=sub, client_kind="machine",
               request_id=request_id or uuid.uuid4().hex)
