"""The Falcon WSGI application factory. `get_app()` is gunicorn's entry point."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import falcon

from pms.api import problems
from pms.api.auth import AuthMiddleware, JwksCache, TokenVerifier
from pms.api.carddata import CardDataMiddleware
from pms.api.console import console_middleware
from pms.api.gate import GateMiddleware
from pms.api.idempotency import IdempotencyMiddleware
from pms.api.inflight import Inflight, LocalInflight
from pms.api.jsonmedia import MsgspecJSONHandler, dumps
from pms.api.middleware import (
    BodyMiddleware,
    DatabaseMiddleware,
    InflightMiddleware,
    RequestIdMiddleware,
    RequestLimitsMiddleware,
)
from pms.api.public import PublicDocumentMiddleware
from pms.api.readroute import ReadRouteMiddleware
from pms.api.reference import reference_files_middleware
from pms.api.router import SharedRouter
from pms.api.tracing import TraceMiddleware
from pms.clock import Clock, SystemClock
from pms.config import Settings, load_settings
from pms.db.database import PmsPostgresDatabase, PreludeRefused
from pms.db.replicas import ReplicaSet
from pms.routes import Route, add_routes, route_body_limits

log = logging.getLogger("pms.app")


@dataclass
class Deps:
    """What resources get injected (Falcon's create_app(deps) pattern)."""

    settings: Settings
    clock: Clock
    platform: Any
    inflight: Inflight
    jwks: JwksCache
    routes: list[Route] = field(default_factory=list)
    broker_check: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


def create_app(settings: Settings, *, db: Any = None, platform: Any = None,
               clock: Clock | None = None, inflight: Inflight | None = None,
               jwks: JwksCache | None = None, broker_check: Any = None,
               replicas: ReplicaSet | None = None) -> falcon.App:
    """Build the WSGI app. Binds the database if `db` is not given already bound; the hot
    standbys are `replicas`, else those of the settings."""
    from pms.db.database import db as proxy
    from pms.db.database import init_db

    if db is not None:
        proxy.initialize(db)
    elif proxy.obj is None:
        init_db(settings.database_url, pool_size=settings.db_pool_size,
                statement_timeout_ms=settings.limits.statement_timeout_ms)
    if platform is None:
        from pms.platform import build_platform

        platform = build_platform(settings)
    clock = clock or SystemClock()
    inflight = inflight or LocalInflight()
    jwks = jwks or JwksCache(settings.jwks_url, max_age_s=settings.jwks_max_age_s)
    deps = Deps(settings=settings, clock=clock, platform=platform, inflight=inflight, jwks=jwks,
                broker_check=broker_check)

    if replicas is None:
        replicas = replica_set(settings, proxy.obj)
    deps.extra["replicas"] = replicas
    json_handler = MsgspecJSONHandler()
    idempotency = IdempotencyMiddleware(settings.idempotency_ttl_hours, dumps)
    body = BodyMiddleware(settings.limits.max_body_bytes)
    gate = GateMiddleware(body)  # its table is the route table, loaded below; it reads the body
    app = falcon.App(
        media_type=falcon.MEDIA_JSON,
        router=SharedRouter(),  # the compiled route tree is built once per route table
        middleware=[
            RequestIdMiddleware(),
            InflightMiddleware(inflight),
            RequestLimitsMiddleware(),  # 414/431 before authentication reads a header
            PublicDocumentMiddleware(deps),  # GET /v1/openapi.json needs no token
            *console_middleware(settings),  # /admin/ files; the dev gateway's part
            reference_files_middleware(),  # /reference/: the document rendered, no token
            AuthMiddleware(TokenVerifier(settings, jwks, clock), clock),
            TraceMiddleware(),  # ctx.traceparent current for every outbound call
            body,
            CardDataMiddleware(),
            # NOTE: before IdempotencyMiddleware: process_response runs in reverse order, so
            # the connection scope ends after the Idempotency-Key record is written in it.
            DatabaseMiddleware(),
            # NOTE: before IdempotencyMiddleware: process_resource runs in list order, so the
            # scope, kind and holder checks come before any stored answer is looked up
            gate,
            # NOTE: after the gate (the caller is known and allowed) and before
            # IdempotencyMiddleware (process_response in reverse: the caller's write mark is
            # left after the Idempotency-Key record committed)
            *([ReadRouteMiddleware(replicas)] if replicas is not None else []),
            idempotency,
        ],
    )
    app.req_options.media_handlers = falcon.media.Handlers({falcon.MEDIA_JSON: json_handler})
    app.resp_options.media_handlers = falcon.media.Handlers({
        falcon.MEDIA_JSON: json_handler,
        "application/problem+json": json_handler,
    })
    app.req_options.strip_url_path_trailing_slash = True
    problems.register(app)
    # the Idempotency-Key claim that rides in a request transaction's first round trip
    app.add_error_handler(PreludeRefused, idempotency.claim_refused)
    deps.routes = add_routes(app, deps)
    body.allow_routes(route_body_limits(deps.routes))  # image uploads
    gate.load(deps.routes)
    return app


def replica_set(settings: Settings, primary: Any) -> ReplicaSet | None:
    """The hot standbys GET requests may read from, or None: none configured, or
    a primary that is not PostgreSQL."""
    if not settings.database_replica_urls or not isinstance(primary, PmsPostgresDatabase):
        return None
    return ReplicaSet(settings.database_replica_urls, pool_size=settings.db_pool_size,
                      statement_timeout_ms=settings.limits.statement_timeout_ms,
                      max_lag_s=settings.replica_max_lag_s,
                      max_lag_bytes=settings.replica_max_lag_bytes)


def get_app() -> falcon.App:
    """Gunicorn entry point: settings from the environment, the gauge from gunicorn_conf."""
    from pms.api.inflight import from_environment
    from pms.logging import configure_logging

    settings = load_settings()
    configure_logging(settings.log_level)
    from pms.startup import refuse_development_fallbacks

    refuse_development_fallbacks(settings, "web")  # (gunicorn_conf checks it first)
    import os

    from pms import wiring

    wiring.install(wiring.for_web(os.environ))  # the process's hooks and TEST-ONLY switches
    app = create_app(settings, inflight=from_environment())
    # Background machinery of this worker process (relay nudge; embedded worker threads and
    # relay when PMS_BROKER_URL=stub://). Started here, after fork, never at import.
    from workers.runtime import start_for_web

    start_for_web(settings)
    return app
