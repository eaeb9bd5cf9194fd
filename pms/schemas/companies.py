"""Corporate accounts (issue 31): company users, admin provisioning, company payment methods."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Literal

import msgspec

from pms.domain.money import quantize
from pms.schemas.cashiering import PaymentMethodId
from pms.schemas.common import Amount, Currency, Email, ListQuery, Name, Out, Strict
from pms.schemas.profiles import PersonName

Role = Literal["ADMIN", "BOOKER", "TRAVELER", "VIEWER"]
Reason = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


class CompanyUserIn(Strict):
    traveler_profile_id: uuid.UUID
    role: Role


class CompanyUserOut(Out):
    id: uuid.UUID
    company_profile_id: uuid.UUID
    traveler_profile_id: uuid.UUID
    role: str
    created_at: datetime


class AdminProvisioningIn(Strict):
    email: Email
    first_name: PersonName
    last_name: PersonName


class AdminProvisioningOut(Out):
    company_profile_id: uuid.UUID
    requires_provisioning: bool
    sso_provider: str | None
    provisioned_admin_at: datetime | None
    admin_profile_ids: list[uuid.UUID]


class CompanyPaymentMethodIn(Strict):
    payment_method_id: PaymentMethodId
    label: Name | None = None


class RateLinksIn(Strict):
    """The negotiated rate plans the company is linked to (replaces the list; [] unlinks all)."""
    rate_plan_ids: Annotated[list[uuid.UUID], msgspec.Meta(max_length=100)]


class LinkedRatePlan(Out):
    id: uuid.UUID
    code: str
    name: str
    currency: str
    active: bool


class RateLinksOut(Out):
    company_profile_id: uuid.UUID
    rate_plan_ids: list[uuid.UUID]
    rate_plans: list[LinkedRatePlan]


class ApproveIn(Strict):
    approval: Literal["POSTPAY", "BILL_TO_COMPANY"]


class ReasonIn(Strict):
    reason: Reason


class CompanyPaymentMethodQuery(ListQuery, kw_only=True):
    usable: bool = False


class CompanyPaymentMethodOut(Out):
    id: uuid.UUID
    company_profile_id: uuid.UUID
    payment_method_id: str
    label: str | None
    status: str
    reason: str | None
    created_at: datetime
    updated_at: datetime


def company_user_out(row: object) -> CompanyUserOut:
    return CompanyUserOut(id=row.id, company_profile_id=row.company_profile_id,  # type: ignore[attr-defined]
                          traveler_profile_id=row.traveler_profile_id,  # type: ignore[attr-defined]
                          role=row.role, created_at=row.created_at)  # type: ignore[attr-defined]


def payment_method_out(row: object) -> CompanyPaymentMethodOut:
    r: object = row
    return CompanyPaymentMethodOut(
        id=r.id, company_profile_id=r.company_profile_id,  # type: ignore[attr-defined]
        payment_method_id=r.payment_method_id, label=r.label,  # type: ignore[attr-defined]
        status=r.status, reason=r.reason, created_at=r.created_at,  # type: ignore[attr-defined]
        updated_at=r.updated_at)  # type: ignore[attr-defined]


class ReceivableAccountIn(Strict):
    credit_limit: Amount
    currency: Currency


class ReceivableAccountOut(Out):
    id: uuid.UUID
    company_profile_id: uuid.UUID
    credit_limit: Amount
    currency: str
    updated_at: datetime
    open_balance: Amount = Decimal(0)  # what the company owes (direct bill at check-out)


class ExposureOut(Out):
    """The company's exposure by part (`pms.services.corporate.company_billing.exposure`)."""

    total: Amount
    receivable: Amount
    open_folios: Amount
    future_stays: Amount


class ReceivableAccountView(ReceivableAccountOut):
    """GET receivable-account: the account, its exposure by part, the ACTIVE unexpired credit
    overrides and what is left under the limit (`available`, never below 0)."""

    exposure: ExposureOut | None = None
    overrides: Amount = Decimal(0)
    available: Amount = Decimal(0)


Reference = Annotated[str, msgspec.Meta(min_length=1, max_length=120)]


class ReceivablePaymentIn(Strict):
    amount: Amount
    currency: Currency
    reference: Reference  # the remittance's reference (bank transfer, cheque number)


class ReceivablePaymentOut(Out):
    id: uuid.UUID
    company_profile_id: uuid.UUID
    amount: Amount
    currency: str
    reference: str
    account: ReceivableAccountView


def receivable_account_out(row: object) -> ReceivableAccountOut:
    r: object = row
    return ReceivableAccountOut(id=r.id, company_profile_id=r.company_profile_id,  # type: ignore[attr-defined]
                                credit_limit=r.credit_limit, currency=r.currency,  # type: ignore[attr-defined]
                                open_balance=quantize(Decimal(r.open_balance or 0), r.currency),  # type: ignore[attr-defined]
                                updated_at=r.updated_at)  # type: ignore[attr-defined]


class CreditOverrideIn(Strict):
    amount: Amount
    currency: Currency
    reason: Reason
    expires_at: datetime


class CreditOverrideOut(Out):
    id: uuid.UUID
    company_profile_id: uuid.UUID
    amount: Amount
    currency: str
    reason: str
    expires_at: datetime
    status: str
    requested_by: str
    decided_by: str | None
    created_at: datetime


def credit_override_out(row: object) -> CreditOverrideOut:
    r: object = row
    return CreditOverrideOut(
        id=r.id, company_profile_id=r.company_profile_id, amount=r.amount,  # type: ignore[attr-defined]
        currency=r.currency, reason=r.reason, expires_at=r.expires_at,  # type: ignore[attr-defined]
        status=r.status, requested_by=r.requested_by,  # type: ignore[attr-defined]
        decided_by=r.decided_by, created_at=r.created_at)  # type: ignore[attr-defined]


# -- a stay billed to a company (direct bill, issue 31) ----------------------------------------

class CompanyBillingIn(Strict):
    """Route a stay's folio to a company through one of its approved payment methods; `cap`:
    the most the company pays (null: the whole balance; the guest pays the rest)."""

    company_profile_id: uuid.UUID
    company_payment_method_id: uuid.UUID
    cap: Amount | None = None


class CompanyBillingOut(Out):
    """Who pays what of the stay's folio before check-out: `balance` is what check-out would
    settle now (`basis` "folio": the guest folio's balance_due, projected room nights
    included; "guaranteed_amount": the stay's total before any folio exists); the company pays
    `company_pays` (its method's `approval` says how: BILL_TO_COMPANY moves it to the company's
    receivable account, POSTPAY charges the company's card after the stay), the guest
    `guest_pays`."""

    reservation_id: uuid.UUID
    company_profile_id: uuid.UUID
    company_payment_method_id: uuid.UUID
    approval: str
    cap: Amount | None
    currency: str
    basis: Literal["folio", "guaranteed_amount"]
    balance: Decimal
    company_pays: Amount
    guest_pays: Decimal
    routed_by: str | None = None
