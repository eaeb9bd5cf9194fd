"""Receipts and advance (deposit) invoices: the fiscal document of one captured payment.

A payment taken before the stay's arrival date (its business date earlier than the arrival) is
an advance payment: its document is a DEPOSIT_INVOICE; any other payment's is a RECEIPT. Each
kind has its own gapless series per property (`<code>-R-000001`, `<code>-D-000001`), the
document names the payment in `refers_to_id` (one document per payment: a unique index), and
like every fiscal document it is frozen at issue, chained into the property's fiscal journal
and queued for its fiscal provider in its transaction. Refunds, pre-authorizations and payments
not (yet) captured get none.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.locking import lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.domain.money import quantize
from pms.errors import Conflict, NotFound
from pms.models import FolioPayment, Property
from pms.models.cashiering import Invoice
from pms.services.cashiering import fiscal_journal, fiscalization
from pms.services.cashiering.cashiering import load_folio, record_change
from pms.services.cashiering.invoices import (
    DEPOSIT_INVOICE,
    RECEIPT,
    _billed,
    _number,
    document_language,
)

KINDS = (RECEIPT, DEPOSIT_INVOICE)


class PaymentNotReceiptable(Conflict):
    """Raised when a receipt is asked for a payment that is not a captured payment."""

    code = "payment_not_receiptable"


def _existing(payment_id: uuid.UUID) -> Invoice | None:
    return Invoice.get_or_none(Invoice.refers_to_id == payment_id, Invoice.kind.in_(KINDS))


def issue_receipt(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID,
                  payment_id: uuid.UUID) -> tuple[dict[str, Any], bool]:
    """The receipt (or deposit invoice) of a captured payment of the folio, numbered on first
    issue. Returns (document, created).

    Raises:
        NotFound: no such folio, or no such payment on it.
        PaymentNotReceiptable (409 payment_not_receiptable): a refund, a pre-authorization, or
            a payment not captured.
    """
    with read_scope(ctx):
        load_folio(ctx, property_id, folio_id)
        existing = _existing(payment_id)
    if existing is not None and existing.folio_id == folio_id:
        return existing.document, False
    with lock_errors(), unit_of_work(ctx) as uow:
        folio = load_folio(ctx, property_id, folio_id, lock=True)
        payment = FolioPayment.get_or_none(FolioPayment.id == payment_id,
                                           FolioPayment.folio == folio.id)
        if payment is None:
            raise NotFound("no such payment on this folio")
        if payment.kind != "PAYMENT" or payment.status != "CAPTURED":
            raise PaymentNotReceiptable(
                "a receipt is issued for a captured payment (not a refund, a "
                "pre-authorization or a payment still pending or failed)",
                payment_id=str(payment.id), payment_status=payment.status)
        existing = _existing(payment_id)
        if existing is not None:
            return existing.document, False
        prop = Property.get_by_id(folio.property_id)
        billed = _billed(folio)
        day = payment.business_date
        kind = (DEPOSIT_INVOICE if day is not None and folio.reservation_id is not None
                and day < billed.arrival_date else RECEIPT)
        number = _number(prop, kind)
        amount = str(quantize(Decimal(str(payment.amount)), payment.currency))
        label = ("Advance payment for the stay" if kind == DEPOSIT_INVOICE
                 else "Payment received")
        document = {
            "id": str(uuid.uuid4()), "kind": kind, "number": number,
            "issued_at": ctx.now.isoformat(), "folio_id": str(folio.id),
            "language": document_language(prop, folio),
            "property": {"code": prop.code, "name": prop.name,
                         "address": prop.display_address},
            "guest": {"first_name": billed.guest_first_name,
                      "last_name": billed.guest_last_name},
            "confirmation_number": billed.confirmation_number,
            "arrival_date": billed.arrival_date.isoformat(),
            "departure_date": billed.departure_date.isoformat(),
            "currency": payment.currency,
            "payment": {"id": str(payment.id), "amount": amount, "method": payment.method,
                        "payment_method_id": payment.payment_method_id,
                        "voucher_code": payment.voucher_code,
                        "business_date": day.isoformat() if day else None},
            "lines": [{"business_date": day.isoformat() if day else "",
                       "description": f"{label} ({payment.method})", "amount": amount,
                       "kind": "payment"}],
            "tax_summary": {},
            "charges_total": amount,
        }
        generation = Invoice.select().where(Invoice.folio_id == folio.id,
                                            Invoice.kind == kind).count()
        row = Invoice.create(id=uuid.UUID(document["id"]), property=prop.id, folio_id=folio.id,
                             kind=kind, generation=generation, refers_to_id=payment.id,
                             number=number, issued_at=ctx.now, document=document,
                             language=document["language"])
        fiscal_journal.append(prop.id, row, now=ctx.now)
        fiscalization.request(uow, row)
        record_change(uow, folio, "receipt_issued")
    return document, True
