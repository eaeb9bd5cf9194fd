"""The one place where errors become RFC 9457 application/problem+json responses."""

from __future__ import annotations

import logging
from typing import Any

import falcon

from pms.db import failures
from pms.db.locking import LockTimeout
from pms.errors import Busy, PmsError
from pms.logmask import mask_card_numbers

log = logging.getLogger("pms.api")

PROBLEM_TYPE_BASE = "https://hotel-pms.dev/problems/"


def problem_body(status: int, code: str, title: str, detail: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": PROBLEM_TYPE_BASE + code,
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
    }
    body.update({k: v for k, v in extra.items() if v is not None})
    return body


def _render(resp: falcon.Response, status: int, body: dict[str, Any]) -> None:
    resp.status = status
    resp.content_type = "application/problem+json"
    resp.media = body


def handle_pms_error(req: falcon.Request, resp: falcon.Response, ex: PmsError,
                     params: dict[str, Any]) -> None:
    extra = dict(ex.extra)
    retry_after = extra.pop("retry_after", None)
    if isinstance(ex, Busy) or ex.status in (429, 503):
        resp.set_header("Retry-After", str(retry_after or 1))
    if ex.status == 401:
        resp.set_header("WWW-Authenticate", 'Bearer realm="hotel-pms"')
    _render(resp, ex.status, problem_body(ex.status, ex.code, ex.title, ex.detail, **extra))


_FALCON_CODES = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
    405: "method_not_allowed", 406: "not_acceptable", 411: "length_required",
    413: "payload_too_large", 415: "unsupported_media_type", 422: "validation_failed",
}


def handle_http_error(req: falcon.Request, resp: falcon.Response, ex: falcon.HTTPError,
                      params: dict[str, Any]) -> None:
    status = ex.status_code
    code = _FALCON_CODES.get(status, "http_error")
    title = ex.title or "Error"
    detail = ex.description or {
        404: "no such resource",
        405: f"{req.method} is not allowed here",
    }.get(status, title)
    if ex.headers:
        for name, value in ex.headers.items():
            resp.set_header(name, value)
    _render(resp, status, problem_body(status, code, str(title), str(detail)))


def handle_unexpected(req: falcon.Request, resp: falcon.Response, ex: Exception,
                      params: dict[str, Any]) -> None:
    """Anything not raised as a PmsError: a database condition on the allow-list of
    pms.db.failures answers 503 with Retry-After (retry, not a bug); everything else is a 500
    `internal_error` with its traceback in the log (database messages redacted)."""
    if isinstance(ex, falcon.HTTPError):
        handle_http_error(req, resp, ex, params)
        return
    request_id = getattr(req.context, "request_id", None)
    kind = failures.classify(ex)
    if kind is not None:
        busy = (LockTimeout("the rows are busy; retry shortly", retry_after=1)
                if kind == failures.BUSY else
                Busy("the database is unavailable; retry shortly", retry_after=1,
                     code="database_unavailable"))
        log.warning("database error answered 503", extra={
            "request_id": request_id, "path": mask_card_numbers(req.path), **failures.describe(ex)})
        handle_pms_error(req, resp, busy, params)
        return
    # NOTE: no exc_info: a handler formatting it would print the driver's message, which holds
    # the statement's values; the traceback goes out redacted instead.
    log.error("unhandled error", extra={
        "request_id": request_id, "path": mask_card_numbers(req.path), **failures.describe(ex),
        "exc": failures.redacted_traceback(ex)})
    _render(resp, 500, problem_body(500, "internal_error", "Internal error",
                                    "the request could not be completed; it was logged",
                                    request_id=request_id))


def register(app: falcon.App) -> None:
    app.add_error_handler(Exception, handle_unexpected)
    app.add_error_handler(falcon.HTTPError, handle_http_error)
    app.add_error_handler(PmsError, handle_pms_error)
