"""`GET /v1/health`: status, in-flight requests across the instance's workers, intended limits,
version and dependency checks (CONTRACT §3). Answers 503 with the same body while draining.

The outbox check counts the caller's tenant's rows (`checks.outbox`); the figures over every
tenant (`checks.outbox_platform`) are shown only to a token with `hotel:pms:health:operator`
(any tenant saw every tenant's backlog)."""

from __future__ import annotations

import socket
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlparse

import falcon
import msgspec
import peewee

from pms import __version__
from pms.api.route import Route
from pms.api.spec import endpoint
from pms.db.database import db
from pms.db.scope import tenant_free, tenant_scope, unscoped


class Check(msgspec.Struct):
    ok: bool
    latency_ms: float | None = None
    detail: str | None = None


class OutboxCheck(msgspec.Struct):
    ok: bool
    backlog: int | None = None
    oldest_unpublished_age_s: float | None = None
    parked: int | None = None
    detail: str | None = None


class HealthOut(msgspec.Struct):
    status: str
    in_flight: int
    limits: dict[str, Any]
    version: str
    checks: dict[str, Any]


def check_database() -> Check:
    started = time.perf_counter()
    try:
        with tenant_free():
            db.execute_sql("SELECT 1").fetchone()
    except Exception as exc:  # noqa: BLE001 - a health check reports, it does not raise
        return Check(ok=False, detail=type(exc).__name__)
    return Check(ok=True, latency_ms=round((time.perf_counter() - started) * 1000, 2))


def check_broker(url: str) -> Check:
    if url.startswith("stub://"):
        return Check(ok=True, detail="embedded StubBroker")
    failure: OSError | None = None
    for address in [u.strip() for u in url.split(",") if u.strip()]:  # a cluster's nodes
        parsed = urlparse(address)
        started = time.perf_counter()
        try:
            with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 5672),
                                          timeout=0.5):
                pass
        except OSError as exc:
            failure = exc
            continue
        return Check(ok=True, latency_ms=round((time.perf_counter() - started) * 1000, 2))
    return Check(ok=False, detail=f"unreachable: {failure.__class__.__name__}")


# Platform-wide figures (every tenant's outbox) are for the platform's operators only.
OPERATOR_SCOPE = "hotel:pms:health:operator"


def check_outbox(now: datetime, env_id: Any = None) -> OutboxCheck:
    """The relay's backlog of one env (`env_id`), or over every env (None: the operator's
    view): unpublished rows still due some day (`backlog`, and the age of the oldest of them),
    and `parked` rows apart. A parked row waits for an operator (`pms-cli outbox replay
    --parked`), not for the relay: counting it in the backlog would show a lag that never
    drains. Parked reactions are in `pms-cli outbox status`."""
    from pms.models.platform import OutboxEvent

    waiting = OutboxEvent.parked_at.is_null()
    where = OutboxEvent.published_at.is_null()
    if env_id is not None:
        where &= OutboxEvent.env_id == env_id
    try:
        with (unscoped() if env_id is None else tenant_scope(env_id)), db.atomic():
            row = (OutboxEvent.select(
                        peewee.fn.SUM(peewee.Case(None, [(waiting, 1)], 0)).alias("backlog"),
                        peewee.fn.MIN(peewee.Case(None, [(waiting, OutboxEvent.created_at)]))
                        .alias("oldest"),
                        peewee.fn.SUM(peewee.Case(None, [(waiting, 0)], 1)).alias("parked"))
                   .where(where)
                   .dicts().get())
    except Exception as exc:  # noqa: BLE001
        return OutboxCheck(ok=False, detail=type(exc).__name__)
    oldest = row.get("oldest")
    if isinstance(oldest, str):
        oldest = datetime.fromisoformat(oldest)
    age = None
    if oldest is not None:
        if oldest.tzinfo is None:
            oldest = oldest.replace(tzinfo=UTC)
        age = round((now - oldest).total_seconds(), 3)
    return OutboxCheck(ok=True, backlog=int(row.get("backlog") or 0),
                       oldest_unpublished_age_s=age, parked=int(row.get("parked") or 0))


class HealthResource:
    # the deploy polls health when the database is in trouble: no policy read may cost it
    # its payload (its scope and token checks still apply)
    outside_policy = True

    def __init__(self, deps: Any) -> None:
        self.deps = deps

    @endpoint("health:read", response=HealthOut, summary="Instance health and intended limits",
              errors=(503,))
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        settings = self.deps.settings
        limits = settings.limits
        draining = self.deps.inflight.draining()
        ctx = req.context.ctx
        now = self.deps.clock.now()
        checks = {
            "database": check_database(),
            "broker": check_broker(settings.broker_url),
            "outbox": check_outbox(now, ctx.env_id),  # the caller's tenant's figures
        }
        if OPERATOR_SCOPE in ctx.scopes:
            checks["outbox_platform"] = check_outbox(now)
        resp.media = HealthOut(
            status="draining" if draining else "ok",
            in_flight=self.deps.inflight.total(),
            limits={
                "rate_limits_per_minute": dict(limits.rate_limits_per_minute),
                "max_body_bytes": limits.max_body_bytes,
                "max_page_size": limits.max_page_size,
                "default_page_size": limits.default_page_size,
                "request_timeout_s": limits.request_timeout_s,
                "statement_timeout_ms": limits.statement_timeout_ms,
            },
            version=__version__,
            checks=checks,
        )
        resp.status = 503 if draining else 200


ROUTES = [Route("/v1/health", HealthResource)]
