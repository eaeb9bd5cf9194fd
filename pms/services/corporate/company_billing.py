"""Billing a stay to a company (issue 31): the booking names one of the company's usable
payment methods (`company_payment_method_id`); a BILL_TO_COMPANY one is checked against the
company's credit limit.

The limit is the receivable account's credit limit plus the company's ACTIVE, unexpired credit
overrides (`pms.services.corporate.credit_overrides`). The exposure it is checked against has three
parts (`exposure`), always of the bill-to company and only of stays billed through a
BILL_TO_COMPANY method: `receivable`, the account's open balance (folio balances moved there at
check-out, `pms.services.corporate.company_direct_bill`); `open_folios`, the company's share of the
posted balances of its in-house stays' OPEN guest folios; `future_stays`, the guaranteed
amounts of its CONFIRMED stays (each under its routing cap). It is checked at booking (and an
edit that raises the total), when a stay is routed to the company and at check-out; the 409
names every part. The check runs with the company's profile row locked (FOR UPDATE), so two
bookings at once cannot both take the last of the limit.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.locking import for_update
from pms.domain.states import (
    COMPANY_PAYMENT_METHOD_USABLE,
    CompanyPaymentMethodStatus,
    FolioStatus,
)
from pms.errors import (
    CreditLimitExceeded,
    NotFound,
    ValidationFailed,
)
from pms.models import (
    CompanyBilling,
    CompanyPaymentMethod,
    CompanyReceivableAccount,
    Folio,
    Profile,
    Reservation,
)
from pms.services.cashiering.folios import folio_balance
from pms.services.corporate import credit_overrides
from pms.services.corporate.companies import may_act_for_company
from pms.services.references import unknown_reference

OPEN_STATUSES = ("CONFIRMED", "CHECKED_IN")


def _refuse(field: str, message: str, code: str = "validation_failed") -> ValidationFailed:
    return ValidationFailed(message, code=code, errors=[{"field": field, "message": message}])


def check_billing(ctx: Ctx, company_id: uuid.UUID | None, method_id: uuid.UUID,
                  property_id: uuid.UUID, total: Decimal, currency: str) -> dict[str, Any]:
    """Inside the booking's unit of work, before its rows are written: the company and method
    are usable for the caller and (BILL_TO_COMPANY) the stay fits under the credit limit.
    Returns the billing summary the booking's event carries.

    Raises: ValidationFailed (422: no company, not one the caller may book for, method not the
        company's or not approved, currency mismatch); CreditLimitExceeded (409).
    """
    method = CompanyPaymentMethod.get_or_none(CompanyPaymentMethod.id == method_id)
    if method is None:  # names nothing here: 422 naming the field (issue 27's one rule)
        raise unknown_reference("company_payment_method_id",
                                "company_payment_method_id is not a known payment method")
    company_id = company_id if company_id is not None else ctx.holder_id
    if company_id is None:
        raise _refuse("company_profile_id", "a booking billed to a company names the company")
    company = for_update(Profile.select().where(Profile.id == company_id,
                                                Profile.kind == "COMPANY")).first()
    if company is None:
        raise unknown_reference("company_profile_id",
                                "company_profile_id is not a known company")
    if not may_act_for_company(ctx, company.id, booking=True):
        raise _refuse("company_profile_id", "not a company this booking may be billed to")
    if (method.company_profile_id != company.id
            or method.status not in COMPANY_PAYMENT_METHOD_USABLE):
        raise _refuse("company_payment_method_id", "not an approved payment method of this "
                      "company (POSTPAY or BILL_TO_COMPANY)", code="payment_method_not_usable")
    summary = {"company_profile_id": str(company.id),
               "company_payment_method_id": str(method.id), "approval": method.status}
    if method.status == CompanyPaymentMethodStatus.BILL_TO_COMPANY:
        check_limit(ctx, company.id, total, currency)
    return summary


def company_share(balance: Decimal, cap: Any) -> Decimal:
    """What the company pays of a folio balance under its routing cap (null: all of it)."""
    if balance <= 0:
        return Decimal(0)
    return balance if cap is None else min(balance, Decimal(cap))


def _billed_to_company(company_id: uuid.UUID) -> Any:
    """The company's billing links through a BILL_TO_COMPANY method (POSTPAY stays are charged
    to a card after the stay: they never reach the receivable account)."""
    bill = CompanyPaymentMethod.select(CompanyPaymentMethod.id).where(
        CompanyPaymentMethod.company_profile_id == company_id,
        CompanyPaymentMethod.status == CompanyPaymentMethodStatus.BILL_TO_COMPANY.value)
    return CompanyBilling.select().where(CompanyBilling.company_profile_id == company_id,
                                         CompanyBilling.company_payment_method_id.in_(bill))


def exposure(company_id: uuid.UUID, *, exclude: uuid.UUID | None = None) -> dict[str, Decimal]:
    """The company's exposure by part (call inside a scope): `receivable`, its open receivable
    balance (folio balances moved there at check-out); `open_folios`, the company's share of
    the posted balances of the OPEN guest folios of its in-house stays; `future_stays`, the
    guaranteed amounts (total_amount, under the routing cap) of its CONFIRMED stays. Only
    stays billed through a BILL_TO_COMPANY method count; `exclude`: one stay left out (the
    one being checked)."""
    links = {link.reservation_id: link for link in _billed_to_company(company_id)
             if link.reservation_id != exclude}
    future = in_house = Decimal(0)
    stays = (Reservation.select(Reservation.id, Reservation.status, Reservation.total_amount)
             .where(Reservation.id.in_(list(links)), Reservation.status.in_(OPEN_STATUSES))
             if links else [])
    checked_in = []
    for stay in stays:
        if stay.status == "CONFIRMED":
            future += company_share(Decimal(stay.total_amount), links[stay.id].cap)
        else:
            checked_in.append(stay.id)
    if checked_in:
        for folio in Folio.select().where(Folio.reservation.in_(checked_in),
                                          Folio.folio_type == "GUEST",
                                          Folio.status == FolioStatus.OPEN.value):
            in_house += company_share(folio_balance(folio), links[folio.reservation_id].cap)
    account = CompanyReceivableAccount.get_or_none(
        CompanyReceivableAccount.company_profile_id == company_id)
    receivable = Decimal(account.open_balance) if account is not None else Decimal(0)
    return {"receivable": receivable, "open_folios": in_house, "future_stays": future}


def check_limit(ctx: Ctx, company_id: uuid.UUID, needed: Decimal, currency: str, *,
                 exclude: uuid.UUID | None = None) -> None:
    account = CompanyReceivableAccount.get_or_none(
        CompanyReceivableAccount.company_profile_id == company_id)
    if account is None:  # approval to BILL_TO_COMPANY needs one; none means no credit
        limit = Decimal(0)
    else:
        limit = Decimal(account.credit_limit)
        if account.currency != currency:
            raise _refuse("company_payment_method_id", f"the company's credit limit is in "
                          f"{account.currency}, this stay in {currency}",
                          code="currency_mismatch")
    parts = exposure(company_id, exclude=exclude)
    balance = sum(parts.values(), Decimal(0))
    overrides = credit_overrides.active_amount(company_id, currency, ctx.now)
    if balance + needed > limit + overrides:
        raise CreditLimitExceeded(
            "this would take the company over its credit limit",
            credit_limit=money(limit), overrides=money(overrides), needed=money(needed),
            currency=currency,
            exposure={"total": money(balance), **{k: money(v) for k, v in parts.items()}})


def money(amount: Decimal) -> str:
    return f"{amount:.2f}"


def record_billing(company_id: str, method_id: str, reservation: Reservation) -> None:
    CompanyBilling.build(company_profile_id=uuid.UUID(company_id),
                         company_payment_method_id=uuid.UUID(method_id),
                         reservation_id=reservation.id,
                         property_id=reservation.property_id).save(force_insert=True)


def check_growth(ctx: Ctx, reservation_id: uuid.UUID, growth: Decimal, currency: str) -> None:
    """An edit of a stay billed BILL_TO_COMPANY that raises its total by `growth` fits under
    the company's limit (its current total is already in the exposure). Inside the edit's
    unit of work; nothing to check for a stay not billed to a company or a total not rising."""
    if growth <= 0:
        return
    link = CompanyBilling.get_or_none(CompanyBilling.reservation_id == reservation_id)
    if link is None:
        return
    method = CompanyPaymentMethod.get_or_none(
        CompanyPaymentMethod.id == link.company_payment_method_id)
    if method is None or method.status != CompanyPaymentMethodStatus.BILL_TO_COMPANY:
        return
    for_update(Profile.select().where(Profile.id == link.company_profile_id)).first()
    check_limit(ctx, link.company_profile_id, growth, currency)


def require_company(ctx: Ctx, company_id: uuid.UUID) -> None:
    """A body's `company_profile_id` names a company profile the caller can see: else 422
    `unknown_reference` naming the field, before any availability check (issue 27's rule); a
    holder session gets 404 as for any row it cannot see (CONTRACT §2)."""
    if not Profile.select(Profile.id).where(Profile.id == company_id,
                                            Profile.kind == "COMPANY").exists():
        if ctx.holder_id is not None:
            raise NotFound("no such company")
        raise unknown_reference("company_profile_id",
                                "company_profile_id is not a known company")
