"""Refunds: give a folio's credit (the guest paid more than the stay costs) back to the guest, to
the card of a captured payment through the payments service, or in cash at the desk.

A refund is a FolioPayment of kind REFUND whose amount is the negated sum given back, so every
sum of captured payments (balance, reports, check-out) nets it without knowing about refunds.
Card refunds follow the payment flow (STYLE K): (1) one unit of work records the refund PENDING
with its idempotency key, outbox and audit rows; (2) after commit the payments service refunds
the original charge with that key; (3) a second short unit of work records the outcome
(CAPTURED: the money went back; FAILED: declined, nothing moved). A crash or an outage between
the steps leaves a PENDING row that `pms.services.cashiering.payments.reconcile_payments` finishes with
`complete_refund`. A PENDING refund already counts against the credit, so two refunds racing
for the same credit cannot both pass. Cash refunds are one unit of work.
"""

from __future__ import annotations

import logging
import uuid
from decimal import Decimal
from typing import Any

import peewee

from pms import wiring
from pms.context import Ctx
from pms.db.locking import for_update, lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.domain.money import exact, quantize
from pms.domain.states import PAYMENT_INITIAL, PAYMENT_MACHINE, PaymentStatus
from pms.errors import Conflict, DependencyUnavailable, ValidationFailed
from pms.models import Folio, FolioPayment, Property
from pms.platform.ledger import LedgerLine
from pms.schemas.folios import FolioOut
from pms.schemas.refunds import RefundIn
from pms.services.cashiering import fiscal_journal
from pms.services.cashiering.cashiering import check_amount, load_folio, record_change, require_open
from pms.services.cashiering.folios import render
from pms.services.cashiering.ledger_postings import record_posting, send_postings
from pms.services.reservations.reservations import business_date

log = logging.getLogger("pms.refunds")

REFUND = "REFUND"
REFUNDABLE_KIND = "PAYMENT"  # pre-authorizations hold money, they never took it
CLEARING = "payments_clearing"

class RefundExceedsCredit(Conflict):
    """Raised when a refund would give back more than the folio's credit (paid - charged)."""

    code = "refund_exceeds_credit"


class RefundExceedsPayment(Conflict):
    """Raised when a card refund would give back more than its payment took (less what was
    refunded from it already)."""

    code = "refund_exceeds_payment"


class PaymentNotRefundable(Conflict):
    """Raised when the payment named is not a captured charge of the payments service."""

    code = "payment_not_refundable"


class RefundDeclined(Conflict):
    """Raised when the payments service declined the refund (recorded FAILED; nothing moved)."""

    code = "refund_declined"


def _field(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(message, errors=[{"field": field, "message": message}])


def _validate(body: RefundIn) -> None:
    check_amount(body.amount)
    if body.method == "CARD" and body.payment_id is None:
        raise _field("payment_id", "a card refund names the captured card payment it refunds")
    if body.method == "CASH" and body.payment_id is not None:
        raise _field("payment_id", "a cash refund names no payment (card refunds do)")


def _sum(query: peewee.ModelSelect) -> Decimal:
    return Decimal(str(query.select(peewee.fn.COALESCE(peewee.fn.SUM(FolioPayment.amount), 0))
                       .scalar()))


def refundable_credit(folio: Folio, now: Any) -> Decimal:
    """What the folio owes the guest now: captured payments (net of refunds) minus the charges,
    the room nights a check-out now would post included, minus refunds still PENDING. Never
    negative. Call inside a scope; inside a unit of work with the folio locked to act on it."""
    due = render(folio, now=now).balance_due
    pending = _sum(FolioPayment.select().where(
        (FolioPayment.folio == folio.id) & (FolioPayment.kind == REFUND)
        & (FolioPayment.status == PaymentStatus.PENDING.value)))
    return max(quantize(-due + pending, folio.currency), quantize(Decimal(0), folio.currency))


def _refundable_payment(folio: Folio, payment_id: uuid.UUID, amount: Decimal) -> FolioPayment:
    """The captured card payment a card refund goes back to, locked, with room for `amount`."""
    payment = for_update(FolioPayment.select().where(
        (FolioPayment.id == payment_id) & (FolioPayment.folio == folio.id)
        & (FolioPayment.kind == REFUNDABLE_KIND))).first()
    if payment is None:
        raise _field("payment_id", "no payment with this id on this folio")
    if payment.method != "CARD":
        raise _field("payment_id", f"a {payment.method} payment is refunded in cash")
    if payment.status != PaymentStatus.CAPTURED or not payment.external_id:
        raise PaymentNotRefundable(
            f"the payment is {payment.status}, not a captured charge: nothing to refund from it",
            payment_id=str(payment.id), payment_status=payment.status)
    # Refunds of it that moved money or may still move it (FAILED ones moved nothing).
    refunded = -_sum(FolioPayment.select().where(
        (FolioPayment.refund_of == payment.id)
        & (FolioPayment.status.in_([PaymentStatus.PENDING.value,
                                    PaymentStatus.CAPTURED.value]))))
    left = quantize(Decimal(str(payment.amount)) - refunded, payment.currency)
    if amount > left:
        raise RefundExceedsPayment(
            f"the payment can give back at most {left} {payment.currency} more",
            payment_id=str(payment.id), refundable=str(left), currency=payment.currency)
    return payment


def _settle(refund: FolioPayment, folio: Folio, now: Any) -> uuid.UUID | None:
    """The ledger movement of money given back: the reverse of the payment's (debit the guest,
    credit the clearing account); the refund chained into the property's fiscal journal."""
    fiscal_journal.append_payment(folio.property_id, refund, now=now)
    amount = -Decimal(str(refund.amount))
    lines = [LedgerLine("guest_ledger", debit=amount), LedgerLine(CLEARING, credit=amount)]
    row = record_posting(folio.property_id, f"refund:{refund.id}", refund.currency, lines,
                         f"refund {refund.id}")
    return row.id if row is not None else None


def refund(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID, body: RefundIn, *,
           payments: Any, ledger: Any = None) -> tuple[FolioOut, FolioPayment]:
    """Give (part of) a folio's credit back to the guest.

    Returns the folio and the refund row (CAPTURED; PENDING when the payments service did not
    answer: the reconciler finishes it).

    Raises:
        NotFound: no such folio on the property.
        FolioClosed (409 folio_closed): a closed folio holds no credit.
        RefundExceedsCredit (409 refund_exceeds_credit, with `credit` and `currency`).
        RefundExceedsPayment (409 refund_exceeds_payment, with `refundable`).
        PaymentNotRefundable (409 payment_not_refundable): the payment is not a captured charge.
        RefundDeclined (409 refund_declined, with `refund_id` and `decline_code`).
        ValidationFailed (422): amount, method and payment_id.
    """
    _validate(body)
    with lock_errors(), unit_of_work(ctx) as uow:
        folio = load_folio(ctx, property_id, folio_id, lock=True)
        require_open(folio)
        amount = exact(body.amount, folio.currency)
        credit = refundable_credit(folio, ctx.now)
        pause = wiring.current().pause_after_credit_check
        if pause is not None:  # TEST-ONLY: widen the window a concurrent refund would need
            pause()
        if amount > credit:
            raise RefundExceedsCredit(
                f"the folio holds a credit of {credit} {folio.currency}; a refund cannot give "
                "back more than the guest paid beyond the charges",
                credit=str(credit), currency=folio.currency, folio_id=str(folio.id))
        original = (_refundable_payment(folio, body.payment_id, amount)
                    if body.payment_id is not None else None)
        row = FolioPayment(
            env_id=ctx.env_id, folio=folio.id, amount=-amount, currency=folio.currency,
            method=body.method, kind=REFUND, status=PAYMENT_INITIAL.value,
            payment_method_id=original.payment_method_id if original else None,
            refund_of=original.id if original else None,
            business_date=business_date(Property.get_by_id(property_id), ctx.now))
        row.id = uuid.uuid4()
        row.idempotency_key = f"refund:{row.id}"
        cash = body.method == "CASH"
        if cash:  # handed over at the desk: done now, no external call
            row.status = PAYMENT_MACHINE.transition(row.status, "capture").value
        row.save(force_insert=True)
        posting = _settle(row, folio, ctx.now) if cash else None
        out = record_change(uow, folio, "payment_refunded" if cash else "refund_initiated",
                            reason=body.reason)
        if posting is not None and ledger is not None:
            uow.after_commit(lambda: send_postings(ctx, ledger, [posting]))
    if cash:
        return out, row
    return complete_refund(ctx, property_id, row.id, payments, ledger)


def complete_refund(ctx: Ctx, property_id: uuid.UUID, refund_id: uuid.UUID, payments: Any,
                    ledger: Any) -> tuple[FolioOut, FolioPayment]:
    """Steps 2 and 3 of a card refund: call the payments service (no transaction open) with the
    refund's idempotency key, record the outcome. Safe to repeat: a row no longer PENDING is
    left as it is, and the payments service answers a repeated key with the first outcome.

    Raises:
        RefundDeclined (409): the payments service declined (the row is FAILED).
    """
    with read_scope(ctx):
        row = FolioPayment.get_by_id(refund_id)
        charge_id = FolioPayment.get_by_id(row.refund_of).external_id
    try:
        result = payments.refund(charge_id=charge_id, amount=-Decimal(str(row.amount)),
                                 currency=row.currency, idempotency_key=row.idempotency_key,
                                 env_id=str(row.env_id), metadata={"folio_id": str(row.folio_id),
                                           "payment_id": str(row.refund_of)})
    except DependencyUnavailable:
        log.warning("payments service unavailable; refund left PENDING",
                    extra={"refund_id": str(refund_id)})
        with read_scope(ctx):
            return render(load_folio(ctx, property_id, row.folio_id), now=ctx.now), row
    posting = None
    with lock_errors(), unit_of_work(ctx) as uow:
        folio = load_folio(ctx, property_id, row.folio_id, lock=True)
        row = for_update(FolioPayment.select().where(FolioPayment.id == refund_id)).get()
        if row.status == PaymentStatus.PENDING:
            row.external_id = result.id
            row.attempts += 1
            trigger = "capture" if result.ok else "fail"
            if not result.ok:
                row.decline_code = result.decline_code or "declined"
            row.status = PAYMENT_MACHINE.transition(row.status, trigger).value
            row.save()
            if trigger == "capture":
                posting = _settle(row, folio, ctx.now)
            out = record_change(uow, folio, "payment_refunded" if result.ok else "refund_failed")
        else:
            out = render(folio, now=ctx.now)
        if posting is not None and ledger is not None:
            uow.after_commit(lambda: send_postings(ctx, ledger, [posting]))
    if row.status == PaymentStatus.FAILED:
        raise RefundDeclined("the payments service declined the refund; nothing was given back",
                             refund_id=str(row.id), decline_code=row.decline_code)
    return out, row
