"""The unit of work the calling code runs in (a context variable): set by `unit_of_work`
(pms.db.uow), read there and by the rules that check a unit of work's writes
(pms.db.versioned), which the unit of work imports in turn."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

CURRENT_UOW: ContextVar[Any] = ContextVar("pms_unit_of_work", default=None)


def current_unit_of_work() -> Any:
    """The current unit of work (pms.db.uow.UnitOfWork), or None."""
    return CURRENT_UOW.get()
