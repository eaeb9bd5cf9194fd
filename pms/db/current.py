"""The unit of work the calling code runs in (a context variable): set by `unit_of_work`
(pms.db.uow), read there and by the rules that check a unit of work's writes
(pms.db.versioned), which the unit of work imports in turn; and the request's own transaction
(pms.db.uow.RequestTransaction), whose finished units' writes may still be queued.

`take_pending_writes` is the autoflush: the database runs it before each statement
of the transaction (`pms.db.database`), so the writes a unit of work queued (`UnitOfWork.save`,
`add`, `write`) go out before anything that could read them."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

CURRENT_UOW: ContextVar[Any] = ContextVar("pms_unit_of_work", default=None)
REQUEST_TXN: ContextVar[Any] = ContextVar("pms_request_txn", default=None)


def current_unit_of_work() -> Any:
    """The current unit of work (pms.db.uow.UnitOfWork), or None."""
    return CURRENT_UOW.get()


def take_pending_writes() -> list[tuple[str, list[Any]]] | None:
    """The writes queued in this transaction and not yet sent, as compiled statements in the
    order they were queued (the request transaction's finished units first, then the current
    unit of work), taken (each unit's queue is emptied; a row that cannot be compiled is saved
    now, see `UnitOfWork.take_batch`); None when nothing is queued (the common case: two
    context-variable reads)."""
    txn = REQUEST_TXN.get()
    uow = CURRENT_UOW.get()
    out = None
    if txn is not None:
        for unit in txn.units:
            if unit.pending():
                out = [*(out or ()), *unit.take_batch()]
    if uow is not None and uow.pending():
        out = [*(out or ()), *uow.take_batch()]
    return out
