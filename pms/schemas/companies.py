"""Corporate accounts: company users, admin provisioning, company payment methods, rate links,
routing, a stay billed to a company, production and bookings. The receivable's schemas live in
`pms.schemas.receivables` and are named here too."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Literal

import msgspec

from pms.schemas.cashiering import PaymentMethodId
from pms.schemas.common import (
    Amount,
    Email,
    ListQuery,
    Name,
    Out,
    Strict,
)
from pms.schemas.profiles import PersonName
from pms.schemas.receivables import (  # noqa: F401 (the receivable's schemas, named here too)
    AgingBucket,
    AgingOut,
    AgingQuery,
    ApplyIn,
    ArItemOut,
    ArItemQuery,
    CreditOverrideIn,
    CreditOverrideOut,
    ExposureOut,
    InvoiceIn,
    InvoiceOut,
    PaymentTermsDays,
    Reason,
    ReceivableAccountIn,
    ReceivableAccountOut,
    ReceivableAccountView,
    ReceivablePaymentIn,
    ReceivablePaymentOut,
    Reference,
    StatementLine,
    StatementOut,
    StatementQuery,
    WriteOffIn,
    credit_override_out,
    receivable_account_out,
)

Role = Literal["ADMIN", "BOOKER", "TRAVELER", "VIEWER"]


class CompanyUserIn(Strict):
    traveler_profile_id: uuid.UUID
    role: Role


class CompanyUserRoleIn(Strict):
    role: Role


class CompanyUserOut(Out):
    id: uuid.UUID
    company_profile_id: uuid.UUID
    traveler_profile_id: uuid.UUID
    role: str
    created_at: datetime


class CompanyInvitationOut(Out):
    """A company ADMIN's request to bind a traveler: status PENDING, ACCEPTED, DECLINED or
    EXPIRED (a PENDING one past `expires_at`); `company_user_id` once accepted."""

    id: uuid.UUID
    company_profile_id: uuid.UUID
    traveler_profile_id: uuid.UUID
    role: str
    status: str
    expires_at: datetime
    created_at: datetime
    decided_at: datetime | None = None
    company_user_id: uuid.UUID | None = None


class AdminProvisioningIn(Strict):
    email: Email
    first_name: PersonName
    last_name: PersonName


class IdentityProviderIn(Strict):
    """The company's identity provider (`preferences.sso_provider`); null: none (its users are
    then managed by a bound ADMIN)."""

    sso_provider: Annotated[str, msgspec.Meta(min_length=1, max_length=120)] | None


class AdminProvisioningOut(Out):
    company_profile_id: uuid.UUID
    requires_provisioning: bool
    sso_provider: str | None
    provisioned_admin_at: datetime | None
    admin_profile_ids: list[uuid.UUID]


class CompanyPaymentMethodIn(Strict):
    payment_method_id: PaymentMethodId
    label: Name | None = None


class RateLinkIn(Strict):
    """One link with its validity: the stay's nights must all fall within valid_from ..
    valid_to (inclusive; either open when null)."""

    rate_plan_id: uuid.UUID
    valid_from: date | None = None
    valid_to: date | None = None


class RateLinksIn(Strict):
    """The path property's negotiated rate plans the company is linked to (replaces that
    property's links; [] unlinks all of them; other properties' links stay): either
    `rate_plan_ids` (links valid on every date) or `links` (each with its validity dates)."""

    rate_plan_ids: Annotated[list[uuid.UUID], msgspec.Meta(max_length=100)] | None = None
    links: Annotated[list[RateLinkIn], msgspec.Meta(max_length=100)] | None = None


class LinkedRatePlan(Out):
    id: uuid.UUID
    code: str
    name: str
    currency: str
    active: bool
    valid_from: date | None = None  # the link's validity (null: open on that side)
    valid_to: date | None = None


class RateLinksOut(Out):
    """The company's links to the path property's plans (`property_id`)."""

    company_profile_id: uuid.UUID
    rate_plan_ids: list[uuid.UUID]
    rate_plans: list[LinkedRatePlan]
    property_id: uuid.UUID | None = None


class ApproveIn(Strict):
    approval: Literal["POSTPAY", "BILL_TO_COMPANY"]


class ReasonIn(Strict):
    reason: Reason


class CompanyPaymentMethodQuery(ListQuery, kw_only=True):
    usable: bool = False


class CompanyPaymentMethodOut(Out):
    """A company payment method; `approval` (SPEC's field: PENDING, POSTPAY, BILL_TO_COMPANY,
    REJECTED) is its only lifecycle (kept in the row's `status` column). brand, last4,
    exp_month and exp_year are the card as the payments service reported it at submission
    (what the approver checks; null on a method submitted before the service was asked)."""

    id: uuid.UUID
    company_profile_id: uuid.UUID
    payment_method_id: str
    label: str | None
    approval: str
    reason: str | None
    brand: str | None
    last4: str | None
    exp_month: int | None
    exp_year: int | None
    created_at: datetime
    updated_at: datetime


def company_user_out(row: object) -> CompanyUserOut:
    return CompanyUserOut(id=row.id, company_profile_id=row.company_profile_id,  # type: ignore[attr-defined]
                          traveler_profile_id=row.traveler_profile_id,  # type: ignore[attr-defined]
                          role=row.role, created_at=row.created_at)  # type: ignore[attr-defined]


def invitation_out(row: object, now: datetime | None = None,
                   company_user_id: uuid.UUID | None = None) -> CompanyInvitationOut:
    """The invitation as the API shows it; `now` past `expires_at` reads a PENDING one as
    EXPIRED (nothing sweeps them: an expired invitation simply can no longer be accepted)."""
    r: object = row
    status = r.status  # type: ignore[attr-defined]
    if status == "PENDING" and now is not None and r.expires_at <= now:  # type: ignore[attr-defined]
        status = "EXPIRED"
    return CompanyInvitationOut(
        id=r.id, company_profile_id=r.company_profile_id,  # type: ignore[attr-defined]
        traveler_profile_id=r.traveler_profile_id, role=r.role,  # type: ignore[attr-defined]
        status=status, expires_at=r.expires_at, created_at=r.created_at,  # type: ignore[attr-defined]
        decided_at=r.decided_at, company_user_id=company_user_id)  # type: ignore[attr-defined]


def payment_method_out(row: object) -> CompanyPaymentMethodOut:
    r: object = row
    return CompanyPaymentMethodOut(
        id=r.id, company_profile_id=r.company_profile_id,  # type: ignore[attr-defined]
        payment_method_id=r.payment_method_id, label=r.label,  # type: ignore[attr-defined]
        approval=r.status, reason=r.reason, brand=r.brand,  # type: ignore[attr-defined]
        last4=r.last4, exp_month=r.exp_month, exp_year=r.exp_year,  # type: ignore[attr-defined]
        created_at=r.created_at, updated_at=r.updated_at)  # type: ignore[attr-defined]


# -- a stay billed to a company (direct bill) ----------------------------------------

Category = Annotated[str, msgspec.Meta(min_length=1, max_length=16,
                                        description="a folio line category (room, tax, ...)")]
Code = Annotated[str, msgspec.Meta(min_length=1, max_length=32)]


class RoutingIn(Strict):
    """Which folio lines the company pays: lines of these `categories` (case-insensitive) or
    `transaction_codes`; a tax line goes with the line it taxes; naming neither: every line.
    `cap`: the most the company pays of a stay (null: no cap)."""

    categories: Annotated[list[Category], msgspec.Meta(max_length=20)] | None = None
    transaction_codes: Annotated[list[Code], msgspec.Meta(max_length=50)] | None = None
    cap: Amount | None = None


class RoutingOut(Out):
    company_profile_id: uuid.UUID
    categories: list[str] | None
    transaction_codes: list[str] | None
    cap: Amount | None
    updated_at: datetime | None = None


class CompanyBillingIn(Strict):
    """Route a stay's folio to a company through one of its approved payment methods; `cap`:
    the most the company pays (null: the whole balance; the guest pays the rest);
    `categories` / `transaction_codes`: the lines it pays (RoutingIn). Naming none of the
    three: the company's contract routing applies."""

    company_profile_id: uuid.UUID
    company_payment_method_id: uuid.UUID
    cap: Amount | None = None
    categories: Annotated[list[Category], msgspec.Meta(max_length=20)] | None = None
    transaction_codes: Annotated[list[Code], msgspec.Meta(max_length=50)] | None = None


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
    categories: list[str] | None = None
    transaction_codes: list[str] | None = None


# -- the company's stays: production, "our bookings" -----------------------------------------

class EnvLevelQuery(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The query of an env-level company route: none. A `property_id` is refused (422), so an
    env-level field is never decided for one property."""


class ProductionQuery(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Nights from `from_date` to `to_date` (both included; at most 1096 days); `property_id`
    narrows the report to one property (and the request is then decided for it)."""

    from_date: date
    to_date: date
    property_id: uuid.UUID | None = None


class ProductionRow(Out):
    """One property's month: the company's room nights and room revenue (the nightly room
    prices of its stays' nights in the month, in the property's currency), and how many of
    its stays had a night in it."""

    property_id: uuid.UUID
    property_code: str
    month: str
    currency: str
    room_nights: int
    room_revenue: Amount
    stays: int


class ProductionSum(Out):
    currency: str
    room_nights: int
    room_revenue: Amount


class ProductionOut(Out):
    """A company's production over a date range, by property and month (CONFIRMED,
    CHECKED_IN and CHECKED_OUT stays booked for it; cancelled and no-show stays produce
    nothing), with the sums per currency."""

    company_profile_id: uuid.UUID
    from_date: date
    to_date: date
    rows: list[ProductionRow]
    sums: list[ProductionSum]


BookingStatus = Literal["CONFIRMED", "CHECKED_IN", "CHECKED_OUT", "CANCELLED", "NO_SHOW"]


class CompanyBookingQuery(ListQuery, kw_only=True):
    """Filters of the company's bookings at the property (keyset pages in booking order)."""

    status: BookingStatus | None = None
    arrival_from: date | None = None
    arrival_to: date | None = None
    traveler_profile_id: uuid.UUID | None = None


class CompanyBookingOut(Out):
    """A stay booked for the company, as its users see it (no prices: the stay's amounts are
    the hotel's books, shown on the reservation to its guest and to staff)."""

    id: uuid.UUID
    confirmation_number: str
    property_id: uuid.UUID
    status: str
    arrival_date: date
    departure_date: date
    nights: int
    room_type_id: uuid.UUID
    guest_profile_id: uuid.UUID | None
    guest_first_name: str | None
    guest_last_name: str | None
    company_profile_id: uuid.UUID
    billed_to_company: bool
    created_at: datetime
