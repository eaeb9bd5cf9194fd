"""Corporate accounts: company users and company payment methods.

A company is a COMPANY profile; these rows are guarded by its id (the `{profile_id}` of the
routes). Uniqueness per (company, traveler) and per (company, payment method reference) is a
database constraint (migration 028).
"""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, JsonField, MoneyField, TenantModel, UtcDateTimeField


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


class CompanyInvitation(AggregateModel):
    """A company ADMIN's request to bind a guest profile (migration 061): PENDING until the
    traveler accepts (the binding is made then) or declines, or until `expires_at` passes."""

    company_profile_id = peewee.UUIDField()
    traveler_profile_id = peewee.UUIDField()
    property_id = peewee.UUIDField()
    role = peewee.CharField(max_length=16)
    status = peewee.CharField(max_length=16)
    expires_at = UtcDateTimeField()
    invited_by = peewee.CharField(max_length=255)
    decided_at = UtcDateTimeField(null=True)

    class Meta:
        table_name = "company_invitation"
        indexes = (
            (("env_id", "traveler_profile_id", "status"), False),
            (("env_id", "company_profile_id", "traveler_profile_id"), False),
        )


class CompanyPaymentMethod(AggregateModel):
    company_profile_id = peewee.UUIDField()
    payment_method_id = peewee.CharField(max_length=128)
    label = peewee.CharField(max_length=200, null=True)
    status = peewee.CharField(max_length=24)
    reason = peewee.CharField(max_length=500, null=True)
    # the card as the payments service reported it at submission (migration 063)
    brand = peewee.CharField(max_length=32, null=True)
    last4 = peewee.CharField(max_length=4, null=True)
    exp_month = peewee.SmallIntegerField(null=True)
    exp_year = peewee.SmallIntegerField(null=True)

    class Meta:
        table_name = "company_payment_method"
        indexes = (
            (("env_id", "company_profile_id", "payment_method_id"), True),
        )


class CompanyReceivableAccount(AggregateModel):
    """The company's receivable account settings: its credit limit, in one currency, and its
    payment terms (days from an invoice's issue to its due date)."""

    company_profile_id = peewee.UUIDField()
    credit_limit = MoneyField()
    currency = peewee.CharField(max_length=3)
    open_balance = MoneyField(default=0)  # folio balances moved here at check-out (migration 033)
    credit_balance = MoneyField(default=0)  # held for the company (a paid bill reverted, 049)
    payment_terms_days = peewee.SmallIntegerField(default=30)  # an invoice's due date (071)

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
    # routing by charge type (migration 051): the folio lines the company pays, by category or
    # transaction code; both null: every line (the whole balance, under the cap)
    categories = JsonField(null=True)
    transaction_codes = JsonField(null=True)

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


class CompanyRoutingInstruction(AggregateModel):
    """The company's contract routing (one per company): which folio lines the company pays,
    by category and transaction code, with an optional cap. Copied onto a stay's routing
    (`CompanyBilling`) when the stay is billed to the company without instructions of its
    own, so a later contract change never re-prices a booked stay."""

    company_profile_id = peewee.UUIDField()
    categories = JsonField(null=True)  # folio line categories, lower case (null: none named)
    transaction_codes = JsonField(null=True)  # transaction codes (null: none named)
    cap = MoneyField(null=True)

    class Meta:
        table_name = "company_routing_instruction"
        indexes = (
            (("env_id", "company_profile_id"), True),
        )


class CompanyArItem(TenantModel):
    """An entry of the company's receivable ledger. `amount` is signed (what it adds to what
    the company owes): a DIRECT_BILL is positive; a PAYMENT, a REVERSAL and a WRITE_OFF are
    negative. `open_amount` is what is left to match: of a DIRECT_BILL, what is still owed
    of it (an open item); of a PAYMENT or a REVERSAL, the credit not yet applied (positive)."""

    company_profile_id = peewee.UUIDField()
    property_id = peewee.UUIDField()
    kind = peewee.CharField(max_length=16)
    amount = MoneyField()
    open_amount = MoneyField(default=0)
    currency = peewee.CharField(max_length=3)
    business_date = peewee.DateField()
    reservation_id = peewee.UUIDField(null=True)
    folio_id = peewee.UUIDField(null=True)
    folio_payment_id = peewee.UUIDField(null=True)  # the DIRECT_BILL payment (or its refund)
    lines = JsonField(null=True)  # the folio lines the company took over (id, category, amount)
    of_item_id = peewee.UUIDField(null=True)  # the item a REVERSAL or WRITE_OFF settles
    invoice_id = peewee.UUIDField(null=True)
    reference = peewee.CharField(max_length=500, null=True)

    class Meta:
        table_name = "company_ar_item"
        indexes = (
            (("env_id", "company_profile_id", "business_date"), False),
            (("env_id", "folio_payment_id"), False),
        )


class CompanyInvoice(TenantModel):
    """A numbered company invoice grouping open items (`CompanyArItem.invoice_id`); the number
    is `<series>-<property code>-<n>`, gapless per property and series."""

    company_profile_id = peewee.UUIDField()
    property_id = peewee.UUIDField()
    series = peewee.CharField(max_length=16)
    number = peewee.CharField(max_length=64)
    issued_on = peewee.DateField()
    due_on = peewee.DateField()
    total = MoneyField()
    currency = peewee.CharField(max_length=3)

    class Meta:
        table_name = "company_invoice"
        indexes = (
            (("env_id", "property_id", "number"), True),
            (("env_id", "company_profile_id", "issued_on"), False),
        )


class CompanyInvoiceSequence(TenantModel):
    """The last company invoice number of a property and series (locked while one is taken)."""

    property_id = peewee.UUIDField()
    series = peewee.CharField(max_length=16)
    last_number = peewee.IntegerField(default=0)

    class Meta:
        table_name = "company_invoice_sequence"
        indexes = (
            (("env_id", "property_id", "series"), True),
        )


class CompanyArApplication(TenantModel):
    """A credit (PAYMENT or REVERSAL item) applied to an invoice's open items."""

    company_profile_id = peewee.UUIDField()
    credit_item_id = peewee.UUIDField()
    invoice_id = peewee.UUIDField()
    amount = MoneyField()

    class Meta:
        table_name = "company_ar_application"
        indexes = (
            (("env_id", "invoice_id"), False),
        )
