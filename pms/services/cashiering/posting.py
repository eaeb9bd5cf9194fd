"""Posting to a folio from another capability's use case: lines with their tax lines.

A use case of another package that bills a folio (a banquet event's resources) runs in its own
unit of work and calls two functions here, in order:

- `lock_open_folio`: the folio, locked in the order check-out takes (the stay's reservation,
  then the folio), and OPEN (else 409 folio_closed);
- `post_lines_with_tax`: each `PostingLine` becomes a charge line (an allowance line when its
  amount is negative) and its tax lines by its transaction code's rules, with a PENDING ledger
  posting keyed `<ledger_key>:<the charge line's id>`; then the folio's one change (its audit
  row and outbox event) is recorded, once, when anything was posted.

The caller never touches the folio's lines, its ledger rows or its journal rows itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from pms.context import Ctx
from pms.db.uow import UnitOfWork
from pms.models import Folio, FolioCharge
from pms.services.cashiering import cashiering
from pms.services.cashiering.transaction_codes import code_or_none


@dataclass(frozen=True)
class PostingLine:
    """One amount to post: `gross` tax included (negative: an allowance), `quantity` units, the
    property's `transaction_code` by name (its tax rules, category and ledger account; none, or
    no active code of that name: untaxed, category "other")."""

    gross: Decimal
    quantity: int
    description: str
    transaction_code: str | None
    ledger_key: str
    memo: str


def lock_open_folio(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID) -> Folio:
    """The property's folio, locked, for posting.

    Raises: NotFound (no such folio of the property). FolioClosed (409) unless OPEN.
    """
    folio = cashiering.load_folio(ctx, property_id, folio_id, lock=True)
    cashiering.require_open(folio)
    return folio


def post_lines_with_tax(uow: UnitOfWork, folio: Folio, lines: Sequence[PostingLine], *,
                        reason: str) -> list[FolioCharge]:
    """Post `lines` to a folio `lock_open_folio` returned, inside the caller's unit of work; a
    line of zero posts nothing. Records the folio's change ("charge_posted", with `reason`)
    when any line was posted. Returns every folio line written (charges and their taxes)."""
    written: list[FolioCharge] = []
    for line in lines:
        if line.gross == 0:
            continue
        code = (code_or_none(folio.property_id, line.transaction_code)
                if line.transaction_code else None)
        written += cashiering.post_lines_with_tax(
            folio, uow.ctx, code, line.gross, quantity=line.quantity,
            description=line.description, kind="charge" if line.gross > 0 else "allowance",
            category=code.category if code else "other", reason=reason,
            ledger_key=line.ledger_key, memo=line.memo)
    if written:
        cashiering.record_change(uow, folio, "charge_posted", reason=reason)
    return written
