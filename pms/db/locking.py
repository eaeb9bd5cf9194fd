"""Row locks for write transactions.

PostgreSQL: `SELECT ... FOR UPDATE`, taken in a fixed order, under `SET LOCAL lock_timeout`, so a
busy row answers 503 (Busy, with Retry-After) instead of queueing forever. SQLite: the write
transaction already holds the database lock (BEGIN IMMEDIATE), so the query is returned as is.
Locking outside a transaction is refused (pretix's rule).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import peewee

from pms import wiring
from pms.db import failures
from pms.db.database import db, is_postgres
from pms.errors import Busy


class LockTimeout(Busy):
    """Raised when a row lock could not be had within the lock timeout."""

    code = "lock_timeout"


def for_update(query: peewee.ModelSelect) -> peewee.ModelSelect:
    """`query` with FOR UPDATE on PostgreSQL (inside a transaction only). Not locked when the
    wiring turns locking off (the TEST-ONLY control runs, `pms.wiring`)."""
    if not db.in_transaction():
        raise RuntimeError("row locks need a transaction (use unit_of_work)")
    if is_postgres() and locking_enabled():
        return query.for_update()
    return query


def locking_enabled() -> bool:
    """False only in the TEST-ONLY concurrency control runs (`pms.wiring.Wiring`)."""
    return wiring.current().locking_enabled


def set_lock_timeout(ms: int) -> None:
    if is_postgres():
        db.execute_sql(f"SET LOCAL lock_timeout = {int(ms)}")


@contextmanager
def lock_errors() -> Iterator[None]:
    """Turn PostgreSQL lock-timeout / deadlock errors into Busy (503 + Retry-After)."""
    try:
        yield
    except peewee.DatabaseError as exc:
        if is_lock_failure(exc):
            raise LockTimeout("the rows are busy; retry shortly", retry_after=1) from exc
        raise


def is_lock_failure(exc: Any) -> bool:
    """A lock or statement timeout, a deadlock, a serialization failure, or SQLite busy
    (pms.db.failures.BUSY)."""
    return failures.classify(exc) == failures.BUSY
