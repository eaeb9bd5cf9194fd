"""Request plumbing that runs around every responder: request id, in-flight gauge and draining,
the body limit, and the database connection (connect/close only; transactions are the services').
"""

from __future__ import annotations

import random
import re
import time

import falcon

from pms.api.inflight import Inflight
from pms.db.database import db
from pms.errors import BadRequest, Draining, PayloadTooLarge
from pms.logging import FastLine

access_log = FastLine("pms.access", "request")

_REQUEST_ID_OK = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
HEALTH_PATH = "/v1/health"


class RequestIdMiddleware:
    """Take X-Platform-Request-Id (or make one), echo it as X-Request-Id, log the request."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        given = req.get_header("X-Platform-Request-Id")
        # PERF: 128 random bits from the process's PRNG (reseeded in every forked worker), in
        # uuid4().hex's format, without uuid4's getrandom() system call: a request id needs to
        # be unique, not secret.
        request_id = (given if given and _REQUEST_ID_OK.match(given)
                      else f"{random.getrandbits(128):032x}")
        req.context.request_id = request_id
        req.context.started = time.perf_counter()
        resp.set_header("X-Request-Id", request_id)

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        context = req.context
        started = getattr(context, "started", None)
        ctx = getattr(context, "ctx", None)
        access_log.write({
            "request_id": getattr(context, "request_id", None),
            "method": req.method,
            "path": req.path,
            "status": resp.status_code,
            "duration_ms": round((time.perf_counter() - started) * 1000, 2)
            if started is not None else None,
            "env_id": str(ctx.env_id) if ctx else None,
            "sub": ctx.sub if ctx else None,
        })


class InflightMiddleware:
    """Count requests in progress; while draining, refuse new work with 503 (health still answers)."""

    def __init__(self, gauge: Inflight) -> None:
        self.gauge = gauge

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        if self.gauge.draining() and req.path != HEALTH_PATH:
            raise Draining("the instance is shutting down; retry on another instance",
                           retry_after=1)
        self.gauge.enter()
        req.context.counted = True

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        if getattr(req.context, "counted", False):
            req.context.counted = False
            self.gauge.leave()


class BodyMiddleware:
    """Read a request body once, refusing more than `max_bytes` without reading it whole."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.raw_body = b""
        if req.method not in ("POST", "PUT", "PATCH", "DELETE"):
            return
        length = req.content_length
        if length is not None and length > self.max_bytes:
            raise PayloadTooLarge(f"request bodies are limited to {self.max_bytes} bytes",
                                  max_bytes=self.max_bytes)
        try:
            raw = req.bounded_stream.read(self.max_bytes + 1)
        except (OSError, ValueError) as exc:
            raise BadRequest("the request body could not be read") from exc
        if len(raw) > self.max_bytes:
            raise PayloadTooLarge(f"request bodies are limited to {self.max_bytes} bytes",
                                  max_bytes=self.max_bytes)
        req.context.raw_body = raw


class DatabaseMiddleware:
    """The request thread's database connection: on PostgreSQL it is kept between requests
    while healthy (PmsPostgresDatabase.release_after_request); on SQLite it is closed after
    each request (peewee's framework pattern)."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        if db.obj is not None:
            db.obj.resume_for_request()

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        if db.obj is not None and not db.obj.is_closed():
            db.obj.release_after_request()
