"""A company's receivable: its account (credit limit, currency, payment terms), payments,
credit overrides, open items, invoices, aging and statement. `pms.schemas.companies` names them
too."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Literal

import msgspec

from pms.domain.money import quantize
from pms.schemas.common import Amount, Currency, ListQuery, Out, SignedAmount, Strict

Reason = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


PaymentTermsDays = Annotated[int, msgspec.Meta(ge=0, le=365)]


class ReceivableAccountIn(Strict):
    credit_limit: Amount
    currency: Currency
    # days from an invoice's issue to its due date; omitted: kept (30 for a new account)
    payment_terms_days: PaymentTermsDays | None = None


class ReceivableAccountOut(Out):
    id: uuid.UUID
    company_profile_id: uuid.UUID
    credit_limit: Amount
    currency: str
    updated_at: datetime
    open_balance: Amount = Decimal(0)  # what the company owes (direct bill at check-out)
    credit_balance: Amount = Decimal(0)  # what the hotel holds for it (a paid bill reverted)
    payment_terms_days: int = 30  # an invoice is due this many days after its issue


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
    overdue: Amount = Decimal(0)  # open on invoices past their due date


Reference = Annotated[str, msgspec.Meta(min_length=1, max_length=120)]


class ReceivablePaymentIn(Strict):
    amount: Amount
    currency: Currency
    reference: Reference  # the remittance's reference (bank transfer, cheque number)
    invoice_id: uuid.UUID | None = None  # applied to this invoice (the rest held as credit)


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
                                credit_balance=quantize(Decimal(r.credit_balance or 0), r.currency),  # type: ignore[attr-defined]
                                payment_terms_days=r.payment_terms_days,  # type: ignore[attr-defined]
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


# -- the company's receivable ledger -----------------------------------------------------------

class ArItemOut(Out):
    """An entry of the company's receivable: `amount` signed (what it adds to what the company
    owes); `open_amount` of a DIRECT_BILL what is still owed of it, of a PAYMENT or REVERSAL
    the credit not yet applied."""

    id: uuid.UUID
    company_profile_id: uuid.UUID
    property_id: uuid.UUID
    kind: str
    amount: SignedAmount
    open_amount: Amount
    currency: str
    business_date: date
    reservation_id: uuid.UUID | None
    folio_id: uuid.UUID | None
    lines: list[dict[str, str]] | None
    of_item_id: uuid.UUID | None
    invoice_id: uuid.UUID | None
    reference: str | None
    created_at: datetime


class ArItemQuery(ListQuery, kw_only=True):
    open: bool = False  # only items with something left to match


class InvoiceIn(Strict):
    """Group open items into a numbered invoice: `item_ids` (open DIRECT_BILL items not on an
    invoice yet), or all such items dated up to `through_date` (default: all)."""

    item_ids: Annotated[list[uuid.UUID], msgspec.Meta(min_length=1, max_length=500)] | None = None
    through_date: date | None = None
    series: Annotated[str, msgspec.Meta(pattern=r"^[A-Z0-9]{1,8}$")] = "AR"
    # days to the due date; omitted: the account's payment_terms_days
    due_days: PaymentTermsDays | None = None


class InvoiceOut(Out):
    id: uuid.UUID
    company_profile_id: uuid.UUID
    property_id: uuid.UUID
    series: str
    number: str
    issued_on: date
    due_on: date
    total: Amount
    open_amount: Amount
    currency: str
    status: Literal["OPEN", "PAID"]
    items: list[ArItemOut]


class ApplyIn(Strict):
    invoice_id: uuid.UUID
    amount: Amount | None = None  # default: as much as both have


class WriteOffIn(Strict):
    item_id: uuid.UUID
    amount: Amount
    reason: Reason


class AgingQuery(msgspec.Struct, kw_only=True):
    as_of: date | None = None  # default: the property's business date
    # billed: days since billed (current under 30, 30, 60, 90+); due: days past the invoice's
    # due date (current: not yet due, 1-30, 31-60, 61-90, 90+)
    basis: Literal["billed", "due"] = "billed"


class AgingBucket(Out):
    """One bucket of the requested basis: open items whose age in days is from_days ..
    to_days (to_days null: and older; on the due basis from_days 0 is "not yet due")."""

    name: str
    from_days: int
    to_days: int | None
    amount: Amount


class AgingOut(Out):
    """Open items by age: the flat buckets (current under 30, 30, 60, 90+) by days since
    billed whatever the basis; `buckets` by the requested basis (`due`: days past the due date
    of the item's invoice; an item not invoiced yet is not yet due). Less the unapplied
    credit, `net` equals open_balance less credit_balance of the account."""

    company_profile_id: uuid.UUID
    as_of: date
    currency: str
    current: Amount
    days_30: Amount
    days_60: Amount
    days_90_plus: Amount
    total_open: Amount
    unapplied_credit: Amount
    net: SignedAmount
    basis: str = "billed"
    buckets: list[AgingBucket] = []  # the open items by the requested basis
    overdue: Amount = Decimal(0)  # open on invoices past their due date as of as_of


class StatementQuery(msgspec.Struct, kw_only=True):
    from_date: date | None = None
    to_date: date | None = None


class StatementLine(Out):
    business_date: date
    kind: str
    item_id: uuid.UUID
    amount: SignedAmount
    balance: SignedAmount
    reference: str | None
    reservation_id: uuid.UUID | None
    invoice_number: str | None
    due_on: date | None = None  # the due date of the invoice the entry is on


class StatementOut(Out):
    """Every entry dated in the period with the running balance: opening plus the entries is
    closing; over all time closing equals open_balance less credit_balance (and the ledger's
    `company_receivable:<company>`)."""

    company_profile_id: uuid.UUID
    currency: str
    from_date: date | None
    to_date: date | None
    opening_balance: SignedAmount
    lines: list[StatementLine]
    closing_balance: SignedAmount
