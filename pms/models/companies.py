"""Corporate accounts (issue 31): company users and company payment methods.

A company is a COMPANY profile; these rows are guarded by its id (the `{profile_id}` of the
routes). Uniqueness per (company, traveler) and per (company, payment method reference) is a
database constraint (migration 028).
"""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, MoneyField, TenantModel, UtcDateTimeField


class CompanyUser(AggregateModel):
    company_profile_id = peewee.UUIDField()
    traveler_profile_id = peewee.UUIDField()
    role = peewee.CharField(max_length=16)

    class Meta:
        table_name = "company_user"
        indexes = (
            (("env_id", "company_profile_id", "traveler_profile_id"), True),
            (("env_id", "traveler_profile_id"), False),
        )


class CompanyPaymentMethod(AggregateModel):
    company_profile_id = peewee.UUIDField()
    payment_method_id = peewee.CharField(max_length=128)
    label = peewee.CharField(max_length=200, null=True)
    status = peewee.CharField(max_length=24)
    reason = peewee.CharField(max_length=500, null=True)

    class Meta:
        table_name = "company_payment_method"
        indexes = (
            (("env_id", "company_profile_id", "payment_method_id"), True),
        )


class CompanyReceivableAccount(AggregateModel):
    """The company's receivable account settings: its credit limit, in one currency."""

    company_profile_id = peewee.UUIDField()
    credit_limit = MoneyField()
    currency = peewee.CharField(max_length=3)
    open_balance = MoneyField(default=0)  # folio balances moved here at check-out (migration 033)

    class Meta:
        table_name = "company_receivable_account"
        indexes = (
            (("env_id", "company_profile_id"), True),
        )


class CompanyBilling(TenantModel):
    """A reservation billed to a company through one of its approved payment methods (written
    with the reservation; its exposure counts against the company's credit limit)."""

    company_profile_id = peewee.UUIDField()
    company_payment_method_id = peewee.UUIDField()
    reservation_id = peewee.UUIDField()
    property_id = peewee.UUIDField()
    cap = MoneyField(null=True)  # the most the company pays of the folio (null: all of it)
    routed_by = peewee.CharField(max_length=255, null=True)  # routed after booking, by whom

    class Meta:
        table_name = "company_billing"
        indexes = (
            (("env_id", "reservation_id"), True),
            (("env_id", "company_profile_id"), False),
        )


class CompanyCreditOverride(AggregateModel):
    """Credit above the company's limit until `expires_at`: requested by one staff user and
    approved by another (CREDIT_OVERRIDE_MACHINE)."""

    company_profile_id = peewee.UUIDField()
    amount = MoneyField()
    currency = peewee.CharField(max_length=3)
    reason = peewee.CharField(max_length=500)
    expires_at = UtcDateTimeField()
    status = peewee.CharField(max_length=16)
    requested_by = peewee.CharField(max_length=255)
    decided_by = peewee.CharField(max_length=255, null=True)

    class Meta:
        table_name = "company_credit_override"
        indexes = (
            (("env_id", "company_profile_id", "status"), False),
        )
