"""Ledger postings: double-entry movements recorded with the change they settle, sent after commit.

`record_posting` runs INSIDE the caller's unit of work (a PENDING row, idempotency key included);
`send_postings` runs after commit and marks each row POSTED in its own short transaction;
`reconcile_postings` re-sends PENDING rows left by a crash or an outage (idempotent by key, so the
ledger never books one twice). The ledger service is never called inside a transaction.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.scope import tenant_scope
from pms.db.statements import Statement, param
from pms.db.uow import read_scope
from pms.errors import DependencyUnavailable
from pms.models.cashiering import LedgerPosting
from pms.platform.ledger import LedgerLine, check_balanced

log = logging.getLogger("pms.ledger")

PENDING, POSTED = "PENDING", "POSTED"
CATEGORY_ACCOUNTS = {"room": "room_revenue", "tax": "tax_payable", "F&B": "fnb_revenue",
                     "mini bar": "fnb_revenue", "other": "other_revenue"}


def revenue_lines(amounts: dict[str, Decimal], *, receivable: str = "guest_ledger"
                  ) -> list[LedgerLine]:
    """Debit the receivable, credit each revenue account (negative totals swap sides)."""
    lines: list[LedgerLine] = []
    total = Decimal("0")
    for account, amount in sorted(amounts.items()):
        if amount > 0:
            lines.append(LedgerLine(account, credit=amount))
        elif amount < 0:
            lines.append(LedgerLine(account, debit=-amount))
        total += amount
    if total > 0:
        lines.append(LedgerLine(receivable, debit=total))
    elif total < 0:
        lines.append(LedgerLine(receivable, credit=-total))
    return lines


def by_account(charges: list[tuple[str, str | None, Decimal]]) -> dict[str, Decimal]:
    """(category, ledger account or None, amount) -> amount per ledger account."""
    out: dict[str, Decimal] = defaultdict(Decimal)
    for category, account, amount in charges:
        out[account or CATEGORY_ACCOUNTS.get(category, "other_revenue")] += amount
    return dict(out)


def record_posting(property_id: uuid.UUID, key: str, currency: str, lines: list[LedgerLine],
                   memo: str = "") -> LedgerPosting | None:
    """Insert a PENDING posting inside the caller's unit of work (None when there is nothing)."""
    lines = [ln for ln in lines if ln.debit or ln.credit]
    if not lines:
        return None
    check_balanced(lines)
    return LedgerPosting.create(
        property=property_id, idempotency_key=key, currency=currency, memo=memo[:200],
        status=PENDING, lines=[{"account": ln.account, "debit": str(ln.debit),
                                "credit": str(ln.credit)} for ln in lines])


# PERF: the after-commit send of a charge or payment in one round trip and no query
# building per request (peewee would build three statements each time): the posting row the unit of
# work wrote is sent as it is (`send_postings`; by id, the PENDING row is read by one compiled
# statement), and each outcome written by one compiled UPDATE outside a transaction
# (PostgreSQL runs it, with its settings, as one implicit transaction; SQLite autocommits it).
_PENDING = Statement.build("ledger.pending_by_id", lambda: (
    LedgerPosting.select(LedgerPosting.id, LedgerPosting.idempotency_key, LedgerPosting.currency,
                         LedgerPosting.lines, LedgerPosting.memo)
    .where((LedgerPosting.env_id == param.env) & (LedgerPosting.id == param.id)
           & (LedgerPosting.status == PENDING))))
_POSTED = Statement.build("ledger.mark_posted", lambda: (
    LedgerPosting.update(status=POSTED, external_id=param.external_id, posted_at=param.at,
                         updated_at=param.at, attempts=LedgerPosting.attempts + 1)
    .where((LedgerPosting.env_id == param.env) & (LedgerPosting.id == param.id)
           & (LedgerPosting.status == PENDING))))
_ATTEMPTED = Statement.build("ledger.attempted", lambda: (
    LedgerPosting.update(attempts=LedgerPosting.attempts + 1, updated_at=param.at)
    .where((LedgerPosting.env_id == param.env) & (LedgerPosting.id == param.id))))


class _Pending:
    """What sending a PENDING posting needs of its row."""

    __slots__ = ("id", "idempotency_key", "currency", "lines", "memo")

    def __init__(self, id_: Any, key: str, currency: str, lines: Any, memo: str) -> None:
        self.id, self.idempotency_key, self.currency = id_, key, currency
        self.lines, self.memo = lines, memo or ""


def _send(ctx: Ctx, ledger: Any, row: Any) -> bool:
    lines = [LedgerLine(ln["account"], Decimal(ln["debit"]), Decimal(ln["credit"]))
             for ln in row.lines]
    try:
        posting = ledger.post_entry(ctx.env_id, idempotency_key=row.idempotency_key,
                                    currency=row.currency, lines=lines, memo=row.memo)
    except DependencyUnavailable:
        log.warning("ledger unavailable; posting left PENDING", extra={"posting": str(row.id)})
        with tenant_scope(ctx.env_id):
            _written(_ATTEMPTED, id=_key(row.id), at=_at(ctx.now))
        return False
    with tenant_scope(ctx.env_id):
        _written(_POSTED, id=_key(row.id), external_id=posting.id, at=_at(ctx.now))
    return True


def _key(value: Any) -> Any:
    return LedgerPosting.id.db_value(value)


def _at(when: Any) -> Any:
    return LedgerPosting.posted_at.db_value(when)


def _written(statement: Statement, **values: Any) -> None:
    """One compiled write: in the caller's transaction when one is open, else on its own (one
    implicit transaction on PostgreSQL, autocommit on SQLite): one round trip."""
    statement.run(**values)


def send_postings(ctx: Ctx, ledger: Any, postings: list[Any]) -> int:
    """Send the given PENDING postings (after commit): ids, read first (a posting another
    process sent meanwhile is no longer PENDING and is skipped), or the LedgerPosting rows the
    committed unit of work wrote, sent as they are (PERF, no read; the ledger books a
    posting once per idempotency key and the POSTED mark applies to a PENDING row only, so a
    posting `reconcile_postings` sent meanwhile is not booked or marked twice). Returns how
    many were posted."""
    if ledger is None or not postings:
        return 0
    ids = [p for p in postings if not isinstance(p, LedgerPosting)]
    found = [_Pending(p.id, p.idempotency_key, p.currency, p.lines, p.memo)
             for p in postings if isinstance(p, LedgerPosting)]
    if ids:
        with read_scope(ctx):  # (one id per call in practice: the change's own posting)
            found += [_Pending(*row) for i in ids for row in _PENDING.typed_rows(id=_key(i))]
    return sum(_send(ctx, ledger, row) for row in found)


def reconcile_postings(ctx: Ctx, ledger: Any, *, limit: int = 500) -> int:
    """Re-send every PENDING posting of the env (worker / CLI). Returns how many were posted."""
    with read_scope(ctx):
        rows = list(LedgerPosting.select().where(LedgerPosting.status == PENDING)
                    .order_by(LedgerPosting.created_at).limit(limit))
    return sum(_send(ctx, ledger, row) for row in rows)
