"""Refund shapes: give a folio's credit back to the guest, to the card of a captured payment or in
cash. Money is a decimal string validated like every other amount (`Amount`: no JSON numbers,
no more places than the currency has); only payments-service references cross the boundary."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Literal

import msgspec

from pms.domain.money import quantize
from pms.domain.states import PaymentStatus
from pms.schemas.common import Amount, Out, Strict
from pms.schemas.folios import FolioOut

Reason = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


class RefundIn(Strict):
    """A refund of (part of) the folio's credit.

    `CARD` gives the money back to the card of `payment_id` (a captured card payment of this
    folio) through the payments service; `CASH` records money handed back at the desk and takes
    no `payment_id`.
    """

    amount: Amount
    method: Literal["CARD", "CASH"] = "CARD"
    payment_id: uuid.UUID | None = None
    reason: Reason | None = None


class RefundOut(Out):
    """A refund row. `amount` is what goes back to the guest (positive); the folio lists the same
    row among its payments with kind REFUND and the amount negated. Status PENDING: the payments
    service has not answered yet (the reconciler finishes it); CAPTURED: the money went back;
    FAILED: the payments service declined (`decline_code`), nothing moved."""

    id: uuid.UUID
    folio_id: uuid.UUID
    amount: Decimal
    currency: str
    method: Literal["CARD", "CASH"]
    status: PaymentStatus
    refund_of: uuid.UUID | None
    payment_method_id: str | None
    created_at: datetime
    decline_code: str | None = None


class RefundResultOut(Out):
    """The refund and the folio after it."""

    refund: RefundOut
    folio: FolioOut


def refund_out(row: object) -> RefundOut:
    return RefundOut(id=row.id, folio_id=row.folio_id, amount=-quantize(row.amount, row.currency),
                     currency=row.currency, method=row.method, status=row.status,
                     refund_of=row.refund_of, payment_method_id=row.payment_method_id,
                     created_at=row.created_at, decline_code=row.decline_code)
