"""Folio payments and pre-authorizations through the payments service, in three steps
(STYLE K, pretix's flow): (1) one unit of work records the payment PENDING with its idempotency
key; (2) after commit the payments service is called with that key; (3) a second short unit of
work records the outcome (CAPTURED / AUTHORIZED / FAILED). A crash or an outage between the steps
leaves a PENDING row that `reconcile_payments` finishes by repeating the call with the same key,
so the guest is never charged twice and no captured money goes unrecorded. Refunds
(`pms.services.cashiering.refunds`) take the same path and are reconciled here too.

Cash, bank transfers and gift vouchers need no external call: one unit of work. Only
payment_method_id references are stored, never card data.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.fields import utcnow
from pms.db.locking import for_update, lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.domain.money import exact
from pms.domain.states import PAYMENT_INITIAL, PAYMENT_MACHINE, PaymentStatus
from pms.errors import DependencyUnavailable, PaymentDeclined, ValidationFailed
from pms.models import FolioPayment
from pms.platform.ledger import LedgerLine
from pms.platform.payments import require_own_method
from pms.schemas import cashiering as cs
from pms.schemas.folios import FolioOut
from pms.services.cashiering import fiscal_journal
from pms.services.cashiering.cashiering import check_amount, load_folio, record_change, require_open
from pms.services.cashiering.folio_state import (
    outcome_read,
    posting_row,
    read_state,
    record_payment_outcome,
    write_with_commit,
)
from pms.services.cashiering.ledger_postings import send_postings
from pms.services.cashiering.refunds import REFUND, RefundDeclined, complete_refund

log = logging.getLogger("pms.payments")

PAYMENT, PRE_AUTH = "PAYMENT", "PRE_AUTH"
OFFLINE_ACCOUNTS = {"CASH": "payments_clearing", "BANK_TRANSFER": "payments_clearing",
                    "VOUCHER": "voucher_liability"}


def _field(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(message, errors=[{"field": field, "message": message}])


def _validate(body: cs.PaymentIn) -> None:
    check_amount(body.amount)
    if body.method == "CARD" and not (body.payment_method_id or body.pre_authorization_id):
        raise _field("payment_method_id", "a card payment needs payment_method_id or "
                                          "pre_authorization_id")
    if body.method == "VOUCHER" and not body.voucher_code:
        raise _field("voucher_code", "a voucher payment needs voucher_code")
    if body.method != "CARD" and (body.payment_method_id or body.pre_authorization_id):
        fields = ["method", *(f for f in ("payment_method_id", "pre_authorization_id")
                              if getattr(body, f))]
        raise ValidationFailed("payment_method_id and pre_authorization_id are for CARD "
                               "payments", errors=[{"field": f, "message": "CARD payments only"}
                                                   for f in fields])


def _settle(uow: Any, payment: FolioPayment, property_id: uuid.UUID,
            account: str, head: Any = None) -> Any:
    """The ledger movement of captured money: debit the clearing account, credit the guest
    (the PENDING posting written with the commit; returned, for `send_postings`); the payment
    chained into the property's fiscal journal (`head`: its head, locked and read already)."""
    fiscal_journal.append_payment(property_id, payment, now=uow.ctx.now, head=head)
    amount = Decimal(str(payment.amount))
    row = posting_row(property_id, f"payment:{payment.id}", payment.currency,
                      [LedgerLine(account, debit=amount),
                       LedgerLine("guest_ledger", credit=amount)], f"payment {payment.id}")
    if row is None:
        return None
    write_with_commit(uow, row)
    return row


def post_payment(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID, body: cs.PaymentIn, *,
                 payments: Any, ledger: Any = None) -> tuple[FolioOut, FolioPayment]:
    """Take a payment against a folio.

    Returns the folio and the payment (CAPTURED, or PENDING when the payments service could not
    answer: the reconciler finishes it).

    Raises:
        NotFound. FolioClosed (409). ValidationFailed: amount, method fields, pre-authorization.
        PaymentDeclined (402 payment_declined, with payment_id and decline_code).
        VoucherNotRedeemable (409).
    """
    _validate(body)
    if body.pre_authorization_id is None:
        check_own_method(ctx, property_id, folio_id, body.payment_method_id, payments)
    with lock_errors(), unit_of_work(ctx) as uow:
        state = read_state(folio_id, now=ctx.now, property_id=property_id,
                           holder_id=ctx.holder_id, lock=True)
        folio = state.folio
        require_open(folio)
        amount = exact(body.amount, folio.currency)  # "0.004" is refused, never captured as 0.00
        preauth = None
        if body.pre_authorization_id is not None:
            preauth = for_update(FolioPayment.select().where(
                (FolioPayment.id == body.pre_authorization_id)
                & (FolioPayment.folio == folio.id) & (FolioPayment.kind == PRE_AUTH))).first()
            if preauth is None or preauth.status != PaymentStatus.AUTHORIZED:
                raise _field("pre_authorization_id", "no authorized pre-authorization on this folio")
            if amount > preauth.amount:
                raise _field("amount", f"more than the pre-authorized {preauth.amount}")
        payment = FolioPayment(
            env_id=ctx.env_id, folio=folio.id, amount=amount, currency=folio.currency,
            method=body.method, kind=PAYMENT, status=PAYMENT_INITIAL.value,
            payment_method_id=preauth.payment_method_id if preauth else body.payment_method_id,
            pre_authorization_id=preauth.id if preauth else None, voucher_code=body.voucher_code,
            business_date=state.today)
        payment.id = uuid.uuid4()
        payment.idempotency_key = f"payment:{payment.id}"
        posting = None
        if body.method != "CARD":
            if body.method == "VOUCHER":
                from pms.services.cashiering.vouchers import redeem

                redeem(property_id, body.voucher_code or "", amount, folio.currency,
                       today=payment.business_date)
            payment.status = PAYMENT_MACHINE.transition(payment.status, "capture").value
        write_with_commit(uow, payment)  # nothing reads it back before the commit
        state.add_payment(payment)
        if body.method != "CARD":
            posting = _settle(uow, payment, folio.property_id, OFFLINE_ACCOUNTS[body.method])
        out = record_change(uow, folio, "payment_captured" if posting else "payment_initiated",
                            state=state)
        if posting is not None and ledger is not None:
            uow.after_commit(lambda: send_postings(ctx, ledger, [posting]))
    if body.method != "CARD":
        return out, payment
    return _complete_card(ctx, property_id, payment.id, payments, ledger,
                          known=(payment, preauth))


def _call(payments: Any, payment: FolioPayment, preauth_intent: str | None,
          holder_id: uuid.UUID | None = None) -> Any:
    # the env and (a guest session's) holder go with every call
    caller = {"env_id": str(payment.env_id),
              "holder_id": str(holder_id) if holder_id is not None else None}
    if payment.kind == PRE_AUTH:
        intent = payments.create_intent(amount=Decimal(str(payment.amount)),
                                        currency=payment.currency,
                                        payment_method_id=payment.payment_method_id,
                                        idempotency_key=payment.idempotency_key,
                                        metadata={"folio_id": str(payment.folio_id)}, **caller)
        if not intent.ok:
            return intent
        return payments.confirm_intent(intent.id,
                                       idempotency_key=f"{payment.idempotency_key}:confirm",
                                       **caller)
    return payments.charge(amount=Decimal(str(payment.amount)), currency=payment.currency,
                           idempotency_key=payment.idempotency_key,
                           payment_method_id=None if preauth_intent else payment.payment_method_id,
                           intent_id=preauth_intent, metadata={"folio_id": str(payment.folio_id)},
                           **caller)


def check_own_method(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID,
                     payment_method_id: str | None, payments: Any) -> None:
    """A guest session pays only with its own method: one stored on its profile (verified
    with the payments service when it was added: pms.services.profiles.guest_payment_methods),
    or else one the payments service reports as its own, asked outside any transaction. The
    folio is read first, so another holder's folio still answers 404. Staff and channel calls
    are not checked.

    Raises:
        NotFound. ValidationFailed (422 payment_method_not_allowed).
        DependencyUnavailable (503): the payments service cannot say.
    """
    if ctx.holder_id is None or payment_method_id is None:
        return
    from pms.services.profiles.guest_payment_methods import is_stored_method

    with read_scope(ctx):
        read_state(folio_id, now=ctx.now, property_id=property_id, holder_id=ctx.holder_id)
        if is_stored_method(ctx.holder_id, payment_method_id):
            return
    require_own_method(payments, payment_method_id, env_id=str(ctx.env_id),
                       holder_id=str(ctx.holder_id),
                       detail="a guest session may only use its own payment method",
                       message="not a payment method of yours")


def _complete_card(ctx: Ctx, property_id: uuid.UUID, payment_id: uuid.UUID, payments: Any,
                   ledger: Any, *, known: tuple[FolioPayment, FolioPayment | None] | None = None
                   ) -> tuple[FolioOut, FolioPayment]:
    """Steps 2 and 3: call the payments service (no transaction open), record the outcome.

    `known`: the payment (and its pre-authorization) as the caller just committed them, so
    they are not read again before the call. The outcome's transaction locks the payment row,
    then the stay's and the folio's, and reads the folio once (pms.services.cashiering.folio_state); the
    outcome is written only while the row is still PENDING there."""
    if known is not None:
        payment, preauth = known
    else:
        with read_scope(ctx):
            payment = FolioPayment.get_by_id(payment_id)
            preauth = (FolioPayment.get_by_id(payment.pre_authorization_id)
                       if payment.pre_authorization_id else None)
    try:
        result = _call(payments, payment, preauth.external_id if preauth else None,
                       ctx.holder_id)
    except DependencyUnavailable:
        log.warning("payments service unavailable; payment left PENDING",
                    extra={"payment_id": str(payment_id)})
        with read_scope(ctx):
            return load_folio_out(ctx, property_id, payment.folio_id), payment
    posting = None
    with lock_errors(), unit_of_work(ctx) as uow:
        state, head = outcome_read(ctx, property_id, payment,
                                    capture=result.ok and payment.kind == PAYMENT)
        folio = state.folio
        current = next((p for p in state.payments if p.id == payment_id), None)
        changed = current is not None and current.status == PaymentStatus.PENDING
        if changed:
            payment.status = current.status
            payment.external_id = result.id
            payment.attempts = current.attempts + 1
            if not result.ok:
                payment.decline_code = result.decline_code or "declined"
                trigger = "fail"
            else:
                trigger = "authorize" if payment.kind == PRE_AUTH else "capture"
            payment.status = PAYMENT_MACHINE.transition(payment.status, trigger).value
            # the unit of work times the write (queued with its next statement on PostgreSQL)
            payment.updated_at = utcnow()
            record_payment_outcome(uow, payment)
            state.replace_payment(payment)
            if trigger == "capture":
                posting = _settle(uow, payment, folio.property_id, "payments_clearing",
                                  head if head is not None
                                  and head.property_id == folio.property_id else None)
                if payment.pre_authorization_id:
                    pre = for_update(FolioPayment.select().where(
                        FolioPayment.id == payment.pre_authorization_id)).get()
                    pre.status = PAYMENT_MACHINE.transition(pre.status, "consume").value
                    pre.save()
                    state.replace_payment(pre)
            action = {"fail": "payment_failed", "authorize": "pre_authorized",
                      "capture": "payment_captured"}[trigger]
            out = record_change(uow, folio, action, state=state)
        else:
            payment = FolioPayment.get_by_id(payment_id)  # finished meanwhile: as it is now
            from pms.services.cashiering.folios import render_state

            out = render_state(state)
        if posting is not None and ledger is not None:
            uow.after_commit(lambda: send_postings(ctx, ledger, [posting]))
    if payment.status == PaymentStatus.FAILED:
        raise PaymentDeclined("the payments service declined the payment",
                              payment_id=str(payment.id), decline_code=payment.decline_code)
    return out, payment


def complete_after_commit(ctx: Ctx, property_id: uuid.UUID, payment: FolioPayment,
                          payments: Any, ledger: Any) -> None:
    """Steps 2 and 3 for a card payment another change wrote PENDING (a POSTPAY
    company method charged after the stay, at check-out), as the hotel (no holder: the
    company's method is not the guest's). A decline or an outage is logged, never raised: the
    change that wrote the payment is committed; a PENDING row is finished by
    `reconcile_payments`, a FAILED one stays on the folio for the desk."""
    try:
        _complete_card(ctx.with_(holder_id=None), property_id, payment.id, payments, ledger,
                       known=(payment, None))
    except PaymentDeclined:
        log.warning("post-stay charge declined", extra={"payment_id": str(payment.id)})


def load_folio_out(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID) -> FolioOut:
    from pms.services.cashiering.folios import render

    return render(load_folio(ctx, property_id, folio_id), now=ctx.now)


def pre_authorize(ctx: Ctx, property_id: uuid.UUID, folio_id: uuid.UUID,
                  body: cs.PreAuthorizationIn, *, payments: Any) -> tuple[FolioOut, FolioPayment]:
    """Pre-authorize an amount on the guest's card: a payment intent with manual confirmation
    (SPEC rule 8). It does not count against the balance until captured by a payment.

    Raises:
        NotFound. FolioClosed. ValidationFailed. PaymentDeclined (402).
    """
    check_amount(body.amount)
    check_own_method(ctx, property_id, folio_id, body.payment_method_id, payments)
    with lock_errors(), unit_of_work(ctx) as uow:
        state = read_state(folio_id, now=ctx.now, property_id=property_id,
                           holder_id=ctx.holder_id, lock=True)
        folio = state.folio
        require_open(folio)
        payment = FolioPayment(
            env_id=ctx.env_id, folio=folio.id, amount=exact(body.amount, folio.currency),
            currency=folio.currency, method="CARD", kind=PRE_AUTH,
            status=PAYMENT_INITIAL.value, payment_method_id=body.payment_method_id,
            business_date=state.today)
        payment.id = uuid.uuid4()
        payment.idempotency_key = f"preauth:{payment.id}"
        write_with_commit(uow, payment)
        state.add_payment(payment)
        record_change(uow, folio, "pre_authorization_initiated", state=state)
    return _complete_card(ctx, property_id, payment.id, payments, None, known=(payment, None))


def reconcile_payments(ctx: Ctx, *, payments: Any, ledger: Any = None,
                       older_than: timedelta = timedelta(seconds=30), limit: int = 200
                       ) -> dict[str, int]:
    """Finish PENDING card payments, pre-authorizations and card refunds left by a crash or an
    outage by repeating the call with the same idempotency key. Returns counts per outcome (the
    status the row ended in: a refund whose money went back counts as captured)."""
    with read_scope(ctx):
        rows = list(FolioPayment.select(FolioPayment.id, FolioPayment.folio, FolioPayment.kind)
                    .where((FolioPayment.status == PaymentStatus.PENDING.value)
                           & (FolioPayment.method == "CARD")
                           & (FolioPayment.created_at <= utcnow() - older_than))
                    .order_by(FolioPayment.created_at).limit(limit))
        props = {r.id: r.folio.property_id for r in rows}
    outcome = {"captured": 0, "authorized": 0, "failed": 0, "pending": 0}
    for row in rows:
        finish = complete_refund if row.kind == REFUND else _complete_card
        try:
            _, payment = finish(ctx, props[row.id], row.id, payments, ledger)
        except (PaymentDeclined, RefundDeclined):
            outcome["failed"] += 1
            continue
        key = {"CAPTURED": "captured", "AUTHORIZED": "authorized"}.get(payment.status, "pending")
        outcome[key] += 1
    return outcome
