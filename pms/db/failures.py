"""Which database failures are conditions to retry and which are bugs, and how to log them
without SQL literal values or personal data.

The allow-list (everything else is a bug: 500 `internal_error`, traceback in the log):

| kind      | condition                                                   | answer                     |
|-----------|-------------------------------------------------------------|----------------------------|
| `UNAVAILABLE` | connection lost (psycopg2 OperationalError/InterfaceError without SQLSTATE, class 08), admin shutdown, crash shutdown, cannot connect now (57P01, 57P02, 57P03); the process's connection pool full past its wait | 503 `database_unavailable` |
| `BUSY`    | statement timeout (57014), lock timeout (55P03), serialization failure (40001), deadlock (40P01); SQLite busy or locked | 503 `lock_timeout`         |

Both answers carry Retry-After. A psycopg2 message carries the query's values (`DETAIL: Key
(email)=(...)`), so logs get `describe()` (class, SQLSTATE, constraint name) and
`redacted_traceback()` (frames, with the messages of database exceptions replaced).
"""

from __future__ import annotations

import sqlite3
import traceback
from typing import Any

import peewee
import psycopg2
from playhouse.pool import MaxConnectionsExceeded

UNAVAILABLE = "unavailable"
BUSY = "busy"

UNAVAILABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})
BUSY_SQLSTATES = frozenset({"57014", "55P03", "40001", "40P01"})
SQLITE_BUSY_NAMES = ("SQLITE_BUSY", "SQLITE_LOCKED")  # and their extended codes (prefix)

REDACTED = "[message redacted: it may hold SQL values]"
CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


def driver_error(exc: BaseException) -> BaseException | None:
    """The driver's exception behind `exc` (peewee keeps it as `orig`)."""
    if isinstance(exc, psycopg2.Error | sqlite3.Error):
        return exc
    # peewee keeps the driver's exception as `orig`; a failed connect inside a statement is
    # wrapped twice (the pool's connect, then the statement), so follow the chain
    while isinstance(exc, peewee.PeeweeException):
        inner = getattr(exc, "orig", None)
        if isinstance(inner, psycopg2.Error | sqlite3.Error):
            return inner
        if inner is None or inner is exc:
            return None
        exc = inner
    return None


def sqlstate(exc: BaseException) -> str | None:
    driver = driver_error(exc)
    return getattr(driver, "pgcode", None) if driver is not None else None


def classify(exc: BaseException) -> str | None:
    """UNAVAILABLE, BUSY, or None (not a condition to retry: a bug, answered 500)."""
    if isinstance(exc, MaxConnectionsExceeded):
        return UNAVAILABLE
    driver = driver_error(exc)
    if isinstance(driver, psycopg2.Error):
        code = driver.pgcode
        if code is None:
            lost = isinstance(driver, psycopg2.OperationalError | psycopg2.InterfaceError)
            return UNAVAILABLE if lost else None
        if code.startswith("08") or code in UNAVAILABLE_SQLSTATES:
            return UNAVAILABLE
        return BUSY if code in BUSY_SQLSTATES else None
    if isinstance(driver, sqlite3.OperationalError):
        name = getattr(driver, "sqlite_errorname", "") or ""
        return BUSY if name.startswith(SQLITE_BUSY_NAMES) else None
    return None


def describe(exc: BaseException) -> dict[str, Any]:
    """Log fields of a database error: class, SQLSTATE, constraint; never its message."""
    driver = driver_error(exc)
    if driver is None:
        return {"error": type(exc).__name__}
    fields: dict[str, Any] = {"error": f"{type(driver).__module__}.{type(driver).__name__}"}
    if isinstance(driver, psycopg2.Error):
        fields["sqlstate"] = driver.pgcode
        diag = getattr(driver, "diag", None)
        constraint = getattr(diag, "constraint_name", None) if diag is not None else None
        if constraint:
            fields["constraint"] = constraint
    elif isinstance(driver, sqlite3.Error):
        fields["sqlite_error"] = getattr(driver, "sqlite_errorname", None)
    return fields


def _is_database_error(exc: BaseException) -> bool:
    return driver_error(exc) is not None or isinstance(exc, peewee.PeeweeException)


def redacted_traceback(exc: BaseException) -> str:
    """The traceback Python would print for `exc` (causes and contexts first), with the
    message of every database exception replaced by its class, SQLSTATE and constraint."""
    chain: list[tuple[BaseException, str | None]] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    link: str | None = None
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append((current, link))
        if current.__cause__ is not None:
            current, link = current.__cause__, CAUSE
        elif current.__context__ is not None and not current.__suppress_context__:
            current, link = current.__context__, CONTEXT
        else:
            current = None
    parts: list[str] = []
    for item, link_text in reversed(chain):
        if item.__traceback__ is not None:
            parts.append("Traceback (most recent call last):\n")
            parts.extend(traceback.format_tb(item.__traceback__))
        name = f"{type(item).__module__}.{type(item).__qualname__}"
        if _is_database_error(item):
            facts = ", ".join(f"{k}={v}" for k, v in describe(item).items() if k != "error")
            parts.append(f"{name}: {REDACTED}{' (' + facts + ')' if facts else ''}\n")
        else:
            parts.extend(traceback.format_exception_only(type(item), item))
        if link_text:
            parts.append(link_text)
    return "".join(parts).rstrip("\n")
