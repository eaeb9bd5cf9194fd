"""Request plumbing that runs around every responder: request id, in-flight gauge and draining,
the body limit, and the request's database connection scope (transactions are the services').
"""

from __future__ import annotations

import random
import re
from time import perf_counter

import falcon

from pms.api.inflight import Inflight
from pms.api.jsonmedia import inspect_body
from pms.db.database import db
from pms.errors import (
    BadRequest,
    Draining,
    HeaderTooLarge,
    PayloadTooLarge,
    UriTooLong,
    ValidationFailed,
)
from pms.logging import FastLine
from pms.logmask import mask_card_numbers

access_log = FastLine("pms.access", "request")

_REQUEST_ID_OK = re.compile(r"^[A-Za-z0-9._:-]{1,128}$").match
HEALTH_PATH = "/v1/health"
_getrandbits = random.getrandbits
# WSGI names of the headers that Falcon reads without the HTTP_ prefix (req.headers lists them)
_WSGI_CONTENT_HEADERS = frozenset({"CONTENT_TYPE", "CONTENT_LENGTH"})


class RequestIdMiddleware:
    """Take X-Platform-Request-Id (or make one), echo it as X-Request-Id, log the request."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        # PERF: the WSGI variable itself (what req.get_header("X-Platform-Request-Id") reads)
        given = req.env.get("HTTP_X_PLATFORM_REQUEST_ID")
        # PERF: 128 random bits from the process's PRNG (reseeded in every forked worker), in
        # uuid4().hex's format, without uuid4's getrandom() system call: a request id needs to
        # be unique, not secret.
        request_id = (given if given and _REQUEST_ID_OK(given)
                      else f"{_getrandbits(128):032x}")
        context = req.context
        context.request_id = request_id
        context.started = perf_counter()
        resp.set_header("X-Request-Id", request_id)

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        context = req.context
        started = getattr(context, "started", None)
        ctx = getattr(context, "ctx", None)
        access_log.write({
            "request_id": getattr(context, "request_id", None),
            "method": req.method,
            "path": mask_card_numbers(req.path),  # no card number in the access log
            "status": resp.status_code,
            "duration_ms": round((perf_counter() - started) * 1000, 2)
            if started is not None else None,
            "env_id": str(ctx.env_id) if ctx else None,
            "sub": ctx.sub if ctx else None,
        })


class InflightMiddleware:
    """Count requests in progress; once the instance stops taking work, refuse new requests with
    503 (health still answers). While it only drains, requests are served (pms/api/inflight.py)."""

    def __init__(self, gauge: Inflight) -> None:
        self.gauge = gauge

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        if self.gauge.refusing() and req.path != HEALTH_PATH:
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
    """Read a request body once, refusing more than `max_bytes` without reading it whole, and
    inspect it once for every responder (pms.api.jsonmedia.inspect_body): too deep -> 400,
    NUL in any string -> 422. The decoded document is left in `req.context.json_body` for the
    card guard and the money-form check; `req.context.raw_body` keeps the bytes.

    A body sent with `Transfer-Encoding: chunked` has no Content-Length: it is read from the
    raw stream, at most `max_bytes + 1` bytes of it. (gunicorn's `pre_request` hook marks such
    connections, and those announcing a body over the limit, to close after the answer: an
    unread rest could not be skipped cheaply, and the client must not send another request on
    the connection expecting an answer.)

    NUL in the query string or the path is refused here too (422): PostgreSQL cannot compare
    text with NUL, and no parameter of ours needs it.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        # set by the route gate (pms.api.gate.GateMiddleware): the body is read by `load`
        # once the scope check passed, not here (a caller without the scope gets 403, and its
        # body is never read or parsed)
        self.deferred = False
        # routes with a limit of their own ((method, path pattern, bytes), from the
        # route table's `@endpoint(max_body=...)`: image uploads); every other one has max_bytes
        self.route_limits: tuple[tuple[str, re.Pattern[str], int], ...] = ()

    def allow_routes(self, limits: list[tuple[str, str, int]]) -> None:
        """Give the operations (METHOD, path template, bytes) their own body limit."""
        self.route_limits = tuple((method, _path_pattern(path), limit)
                                  for method, path, limit in limits)

    def limit_for(self, req: falcon.Request) -> int:
        for method, pattern, limit in self.route_limits:
            if req.method == method and pattern.match(req.path):
                return limit
        return self.max_bytes

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        context = req.context
        context.raw_body = b""
        context.json_body = None
        if "\x00" in req.path or req.env.get("QUERY_STRING"):
            _refuse_nul_outside_body(req)
        context.body_loaded = False
        if req.method not in _BODY_METHODS:
            return
        if self.deferred:
            length = req.content_length  # announced over the limit: refused unread
            limit = self.limit_for(req) if self.route_limits else self.max_bytes
            if length is not None and length > limit:
                raise PayloadTooLarge(f"request bodies are limited to {limit} bytes",
                                      max_bytes=limit)
            return
        self.load(req)

    def load(self, req: falcon.Request) -> None:
        """Read and inspect the body (once)."""
        context = req.context
        if getattr(context, "body_loaded", True) or req.method not in _BODY_METHODS:
            return
        context.body_loaded = True
        raw = self._read(req, self.limit_for(req) if self.route_limits else self.max_bytes)
        context.raw_body = raw
        if raw and _declares_json(req.content_type):
            context.json_body = inspect_body(raw)

    def _read(self, req: falcon.Request, max_bytes: int) -> bytes:
        length = req.content_length
        if length is not None and length > max_bytes:
            raise PayloadTooLarge(f"request bodies are limited to {max_bytes} bytes",
                                  max_bytes=max_bytes)
        chunked = length is None and "chunked" in (req.get_header("Transfer-Encoding") or "").lower()
        # NOTE: Falcon's bounded_stream reads nothing without a Content-Length; a chunked body
        # is read from the server's stream, which ends where the last chunk does.
        stream = req.stream if chunked else req.bounded_stream
        try:
            raw = stream.read(max_bytes + 1)
        except (OSError, ValueError) as exc:
            raise BadRequest("the request body could not be read") from exc
        if len(raw) > max_bytes:
            raise PayloadTooLarge(f"request bodies are limited to {max_bytes} bytes",
                                  max_bytes=max_bytes)
        return raw


_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _path_pattern(template: str) -> re.Pattern[str]:
    """A route template (`/v1/properties/{property_id}/images`) as a path regex."""
    parts = ["[^/]+" if part.startswith("{") else re.escape(part) for part in template.split("/")]
    return re.compile("^" + "/".join(parts) + "$")


def _declares_json(content_type: str | None) -> bool:
    """No content type (read as JSON by the responders) or a JSON one; others answer 415 later."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    return not kind or kind == "application/json" or kind.endswith("+json")


def _refuse_nul_outside_body(req: falcon.Request) -> None:
    query = req.query_string
    if "%00" in query or "\x00" in query:
        fields = sorted({name for name, value in req.params.items()
                         if "\x00" in name or any("\x00" in v for v in
                                                  (value if isinstance(value, list) else [value]))})
        raise ValidationFailed("the query string must not contain NUL (%00)", errors=[
            {"field": name.replace("\x00", "%00") or "query", "message": "must not contain NUL"}
            for name in fields or ["query"]])
    if "\x00" in req.path:
        raise ValidationFailed("the path must not contain NUL (%00)",
                               errors=[{"field": "path", "message": "must not contain NUL"}])


class RequestLimitsMiddleware:
    """The documented limits on the request line and headers, answered as problem+json before
    authentication reads a header: a request target (path and query) over `max_target_bytes`
    -> 414 `uri_too_long`; one header over `max_header_bytes`, or all of them together over
    `max_headers_bytes` -> 431 `header_too_large` naming it.

    gunicorn's own limits (pms/gunicorn_conf.py `limit_request_*`) are set above these, so
    that such requests reach the app instead of getting gunicorn's HTML 414/431; only beyond
    gunicorn's (16 KiB line, 128 KiB header) does gunicorn answer itself.
    """

    def __init__(self, max_target_bytes: int = 8000, max_header_bytes: int = 16 * 1024,
                 max_headers_bytes: int = 64 * 1024) -> None:
        self.max_target_bytes = max_target_bytes
        self.max_header_bytes = max_header_bytes
        self.max_headers_bytes = max_headers_bytes

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        env = req.env
        raw_uri = env.get("RAW_URI")
        target = len(raw_uri) if raw_uri else len(req.path) + len(req.query_string) + 1
        if target > self.max_target_bytes:
            raise UriTooLong(f"request targets (path and query) are limited to "
                             f"{self.max_target_bytes} bytes", max_bytes=self.max_target_bytes)
        # PERF: a bound over the WSGI variables themselves first (Falcon's req.headers builds a
        # dict of renamed headers); only a request near a limit is measured header by header.
        largest = total = 0
        for name, value in env.items():
            if name[:5] == "HTTP_" or name in _WSGI_CONTENT_HEADERS:
                size = len(name) + len(value)  # >= the header's size as req.headers names it
                total += size
                if size > largest:
                    largest = size
        if largest <= self.max_header_bytes and total <= self.max_headers_bytes:
            return
        self._measure(req)

    def _measure(self, req: falcon.Request) -> None:
        total = 0
        for name, value in req.headers.items():
            size = len(name) + len(value)
            total += size
            if size > self.max_header_bytes:
                raise HeaderTooLarge(f"the {name} header is over {self.max_header_bytes} bytes",
                                     header=name, max_bytes=self.max_header_bytes)
        if total > self.max_headers_bytes:
            raise HeaderTooLarge(f"request headers are limited to {self.max_headers_bytes} bytes",
                                 max_bytes=self.max_headers_bytes)


class DatabaseMiddleware:
    """The request's connection scope (`pms.db.database.connection_scope`): entered in
    process_request, left in process_response, so every statement of the request, its
    Idempotency-Key record included, uses one connection. On PostgreSQL a healthy idle
    connection stays with the request thread for its next request (`keep_idle`).

    NOTE: Falcon runs process_response in the reverse order of the middleware list, so this
    component must come BEFORE every component that touches the database in its
    process_response (IdempotencyMiddleware): its scope then ends after theirs.
    """

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        target = db.obj
        if target is None:
            return
        # the database's own scope (what pms.db.database.connection_scope enters), without the
        # module function's extra generator around it (PERF)
        scope = target.connection_scope(keep_idle=True)
        scope.__enter__()
        req.context.db_scope = scope

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        scope = getattr(req.context, "db_scope", None)
        if scope is not None:
            req.context.db_scope = None
            scope.__exit__(None, None, None)
