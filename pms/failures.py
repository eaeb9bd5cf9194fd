"""What a background failure shows its readers: the `error` of a job (`GET /v1/jobs/{id}`) and
of a night-audit run (`GET .../end-of-day`) is a stable code, a short message and a reference,
never the exception's text (a driver's message may quote statement values). The exception,
its traceback and the reference go to the log, where the reference finds them.

    lock_timeout: the database was busy; run it again (ref 1f2e3d4c5b6a)
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from pms.errors import PmsError

MESSAGES = {
    "database_busy": "the database was busy; run it again",
    "interrupted": "the run was interrupted (a time limit or a shutdown); run it again",
    "internal_error": "the run failed on an unexpected error; the log has the details",
}


def _code_of(exc: BaseException) -> tuple[str, str]:
    import peewee

    if isinstance(exc, PmsError):
        # written for API callers already (a 4xx problem's detail names no internals)
        return exc.code, exc.detail[:300]
    if not isinstance(exc, Exception):
        return "interrupted", MESSAGES["interrupted"]
    if isinstance(exc, peewee.OperationalError) and any(
            word in str(exc).lower() for word in ("locked", "busy", "lock timeout", "deadlock")):
        return "database_busy", MESSAGES["database_busy"]
    return "internal_error", MESSAGES["internal_error"]


def public_error(exc: BaseException, log: logging.Logger, what: str, *,
                 prefix: str = "", **extra: Any) -> str:
    """Log `exc` (with its traceback and a new reference) and return the text for an `error`
    field: `<code>: <message> (ref <reference>)`."""
    reference = uuid.uuid4().hex[:12]
    code, message = _code_of(exc)
    log.error("%s failed (ref %s, %s)", what, reference, code, exc_info=exc,
              extra={**extra, "error_ref": reference, "error_code": code})
    return f"{prefix}{code}: {message} (ref {reference})"
