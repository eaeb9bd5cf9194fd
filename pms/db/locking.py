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
from pms.db.base import AggregateModel
from pms.db.current import current_unit_of_work
from pms.db.database import db, is_postgres
from pms.errors import Busy


class LockTimeout(Busy):
    """Raised when a row lock could not be had within the lock timeout."""

    code = "lock_timeout"


def for_update(query: peewee.ModelSelect, *, skip_locked: bool = False) -> peewee.ModelSelect:
    """`query` with FOR UPDATE on PostgreSQL (inside a transaction only; `skip_locked`: FOR
    UPDATE SKIP LOCKED). Not locked when the wiring turns locking off (the TEST-ONLY control
    runs, `pms.wiring`). The rows it reads with their lock are declared to the unit of work
    (`UnitOfWork.locked`, their events' versions go with the queued writes), the
    query's own model's rows only."""
    if not db.in_transaction():
        raise RuntimeError("row locks need a transaction (use unit_of_work)")
    if is_postgres() and locking_enabled():
        locked = query.for_update(skip_locked=skip_locked) if skip_locked else query.for_update()
        locked.__class__ = _declaring(type(locked))
        return locked
    return query


def for_update_always(query: peewee.ModelSelect) -> peewee.ModelSelect:
    """`query` with FOR UPDATE on PostgreSQL (SQLite's writer lock serializes already), even
    when the TEST-ONLY control runs turn locking off: for an order that is no race under study
    (a hash chain's head), where two writers at one position would fail the use case instead
    of showing its race. Inside a transaction only; nothing is declared to the unit of work."""
    if not db.in_transaction():
        raise RuntimeError("row locks need a transaction (use unit_of_work)")
    return query.for_update() if is_postgres() else query


_DECLARING: dict[type, type] = {}


def _declaring(cls: type) -> type:
    """`cls` (a peewee select class) whose rows, as they are read, are declared locked."""
    found = _DECLARING.get(cls)
    if found is None:
        found = _DECLARING[cls] = type(f"Locked{cls.__name__}", (_DeclaresLocked, cls), {})
    return found


class _DeclaresLocked:
    """Mixin of a FOR UPDATE select (see for_update)."""

    def _get_cursor_wrapper(self, cursor: Any) -> Any:
        wrapper = super()._get_cursor_wrapper(cursor)  # type: ignore[misc]
        model = self.model  # type: ignore[attr-defined]
        process = wrapper.process_row

        def declared(row: Any) -> Any:
            out = process(row)
            if type(out) is model:
                declare_locked(out)
            return out

        wrapper.process_row = declared
        return wrapper


def declare_locked(row: Any) -> Any:
    """Declare `row`, just read with its row lock (FOR UPDATE) inside a unit of work, to that
    unit of work (`UnitOfWork.locked`). A no-op for None, for a row that is no AggregateModel,
    outside a unit of work, on SQLite and when locking is off (the TEST-ONLY unlocked control
    runs, whose reads take no lock). For the locked readers of pms.db (for_update, a
    `Statement` with `locks=`); services never call it. Returns `row`."""
    if isinstance(row, AggregateModel):
        declare_locked_version(type(row), row.id, row.__data__.get("version"))
    return row


def declare_locked_version(model: type, row_id: Any, version: int | None) -> None:
    """`declare_locked` for the row of `model` with that id, read at `version` (None: read
    without its version, so not declared)."""
    if version is None or not locking_enabled() or not is_postgres():
        return
    uow = current_unit_of_work()
    if uow is not None:
        uow.locked_version(model, row_id, version)


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
