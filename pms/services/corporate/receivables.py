"""The company's receivable account: what it owes, its exposure by part, and the
payments it makes against it.

A payment lowers the account's `open_balance` (the `receivable` part of the exposure the credit
limit is checked against, `pms.services.corporate.company_billing`), so the limit frees up; its
ledger posting (debit `payments_clearing`, credit `company_receivable:<company>`) is written
PENDING with the payment and sent after commit (the reconciler re-sends it after a crash). A
retried POST is answered from its Idempotency-Key record (CONTRACT §3), so it is booked once.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.locking import lock_errors
from pms.db.uow import read_scope, unit_of_work
from pms.domain.money import exact, quantize
from pms.errors import Conflict, ValidationFailed
from pms.models import CompanyReceivableAccount
from pms.schemas.common import to_data
from pms.schemas.companies import (
    ExposureOut,
    ReceivableAccountView,
    ReceivablePaymentIn,
    ReceivablePaymentOut,
    receivable_account_out,
)
from pms.services.catalog.catalog import load_property
from pms.services.corporate import credit_overrides, receivable_ledger
from pms.services.corporate.companies import company_access
from pms.services.corporate.company_billing import exposure, money

CLEARING = "payments_clearing"  # where the company's remittance lands (as a card payment's)


class ReceivableOverpaid(Conflict):
    """Raised when a payment is more than the company owes on its receivable account."""

    code = "receivable_overpaid"


def _account(company_id: uuid.UUID, *, lock: bool = False) -> CompanyReceivableAccount:
    return receivable_ledger.account_of(company_id, lock=lock)


def _view(ctx: Ctx, row: CompanyReceivableAccount) -> ReceivableAccountView:
    parts = exposure(row.company_profile_id)
    total = sum(parts.values(), Decimal(0))
    overrides = credit_overrides.active_amount(row.company_profile_id, row.currency, ctx.now)
    left = max(Decimal(row.credit_limit) + overrides - total, Decimal(0))
    q, base = row.currency, receivable_account_out(row)
    return ReceivableAccountView(
        id=base.id, company_profile_id=base.company_profile_id,
        credit_limit=base.credit_limit, currency=q, updated_at=base.updated_at,
        open_balance=base.open_balance, credit_balance=base.credit_balance,
        payment_terms_days=base.payment_terms_days,
        exposure=ExposureOut(total=quantize(total, q),
                             **{k: quantize(v, q) for k, v in parts.items()}),
        overrides=quantize(overrides, q), available=quantize(left, q),
        overdue=quantize(receivable_ledger.overdue(ctx, row.company_profile_id), q))


def get_account(ctx: Ctx, property_id: uuid.UUID | None,
                company_id: uuid.UUID) -> ReceivableAccountView:
    """The account with its exposure by part (staff; 404 without an account). `property_id`
    None: the env-level route."""
    with read_scope(ctx):
        company_access(ctx, property_id, company_id)
        return _view(ctx, _account(company_id))


def receive_payment(ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
                    body: ReceivablePaymentIn, *, ledger: Any = None) -> ReceivablePaymentOut:
    """Record a company's payment against its receivable account (staff): open_balance drops
    by it, a PENDING ledger posting goes out after commit; its PAYMENT item holds it as
    credit, applied to `invoice_id` when named (`pms.services.corporate.receivable_ledger`).
    Audited, with its event
    `hotel:pms:company_receivable_account:payment_received`.

    Raises: NotFound (no company or no account); ValidationFailed (422: amount not positive or
        not exact, currency not the account's); ReceivableOverpaid (409: more than it owes).
    """
    with lock_errors(), unit_of_work(ctx) as uow:
        return receive_in(uow, ctx, property_id, company_id, body, ledger=ledger)


def receive_in(uow: Any, ctx: Ctx, property_id: uuid.UUID, company_id: uuid.UUID,
               body: ReceivablePaymentIn, *, ledger: Any = None) -> ReceivablePaymentOut:
    """`receive_payment` inside the caller's unit of work (the company's profile row and the
    account locked first: two payments at once cannot both take the last of what is owed)."""
    amount = exact(body.amount, body.currency, "amount")
    if amount <= 0:
        raise ValidationFailed("a payment is more than zero",
                               errors=[{"field": "amount", "message": "must be more than 0"}])
    company_access(ctx, property_id, company_id, lock=True)
    row = _account(company_id, lock=True)
    if body.currency != row.currency:
        raise ValidationFailed(
            f"the account is kept in {row.currency}", code="currency_mismatch",
            errors=[{"field": "currency", "message": f"the account is in {row.currency}"}])
    owed = Decimal(row.open_balance or 0)
    if amount > owed:
        raise ReceivableOverpaid(
            "the payment is more than the company owes on its receivable account",
            open_balance=money(owed), amount=money(amount), currency=row.currency)
    item = receivable_ledger.receive(uow, ctx, company_id, load_property(property_id), amount,
                                     row.currency, body.reference, body.invoice_id)
    payment_id = item.id
    receivable_ledger.post_credit(uow, ctx, ledger, property_id,
                                  f"receivable-payment:{payment_id}", row.currency, company_id,
                                  CLEARING, amount, f"Company payment {body.reference}")
    before = to_data(receivable_account_out(row))
    row.open_balance = owed - amount
    row.save()
    uow.record("company_receivable_account", "payment_received", row,
               {**to_data(receivable_account_out(row)), "payment_id": str(payment_id),
                "amount": money(amount), "reference": body.reference,
                "unapplied": money(item.open_amount),
                "invoice_id": None if body.invoice_id is None else str(body.invoice_id)},
               before=before, property_id=property_id)
    return ReceivablePaymentOut(id=payment_id, company_profile_id=company_id,
                                amount=quantize(amount, row.currency),
                                currency=row.currency, reference=body.reference,
                                account=_view(ctx, row))
