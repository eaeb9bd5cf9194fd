"""Billing a stay to a company (issue 31): the booking names one of the company's usable
payment methods (`company_payment_method_id`); a BILL_TO_COMPANY one is checked against the
company's credit limit.

The limit is the receivable account's credit limit plus the company's ACTIVE, unexpired credit
overrides (`pms.services.credit_overrides`). Exposure = the guaranteed amounts (total_amount) of the company's billed stays that are still
CONFIRMED or CHECKED_IN, plus its open receivable balance. Direct bill at check-out is not
built yet, so the receivable part is always 0 and an in-house stay counts with its booked
total (not its live folio balance); the answer names each part. The check runs with the
company's profile row locked (FOR UPDATE), so two bookings at once cannot both take the last
of the limit.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from pms.context import Ctx
from pms.db.locking import for_update
from pms.domain.states import COMPANY_PAYMENT_METHOD_USABLE, CompanyPaymentMethodStatus
from pms.errors import CreditLimitExceeded, NotFound, ValidationFailed
from pms.models import (
    CompanyBilling,
    CompanyPaymentMethod,
    CompanyReceivableAccount,
    Profile,
    Reservation,
)
from pms.services import credit_overrides
from pms.services.companies import may_act_for_company
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
        _check_limit(ctx, company.id, total, currency)
    return summary


def exposure(company_id: uuid.UUID) -> dict[str, Decimal]:
    """The company's exposure by part (call inside a scope)."""
    billed = CompanyBilling.select(CompanyBilling.reservation_id).where(
        CompanyBilling.company_profile_id == company_id)
    stays = {status: Decimal(0) for status in OPEN_STATUSES}
    for status, amount in (Reservation.select(Reservation.status, Reservation.total_amount)
                           .where(Reservation.id.in_(billed),
                                  Reservation.status.in_(OPEN_STATUSES)).tuples()):
        stays[status] += Decimal(amount)
    return {"future_stays": stays["CONFIRMED"], "in_house_stays": stays["CHECKED_IN"],
            "receivable": Decimal(0)}


def _check_limit(ctx: Ctx, company_id: uuid.UUID, needed: Decimal, currency: str) -> None:
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
    parts = exposure(company_id)
    balance = sum(parts.values(), Decimal(0))
    overrides = credit_overrides.active_amount(company_id, currency, ctx.now)
    if balance + needed > limit + overrides:
        raise CreditLimitExceeded(
            "this stay would take the company over its credit limit",
            credit_limit=_money(limit), overrides=_money(overrides), needed=_money(needed),
            currency=currency,
            exposure={"total": _money(balance), **{k: _money(v) for k, v in parts.items()}})


def _money(amount: Decimal) -> str:
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
    _check_limit(ctx, link.company_profile_id, growth, currency)


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
