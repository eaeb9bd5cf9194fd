"""Cashiering shapes: transaction codes, gift vouchers, postings (charges, corrections, moves,
allowances), payments, pre-authorizations and invoices. Money is a decimal string with a currency.
Payments carry only a payments-service `payment_method_id` reference, never card data."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pms.domain.money import quantize
from pms.domain.states import VoucherStatus
from pms.schemas.common import Amount, Code, Currency, Cursor, Name, Out, Strict, Text

Category = Literal["room", "tax", "F&B", "mini bar", "other"]
LedgerAccount = Literal["room_revenue", "fnb_revenue", "other_revenue", "tax_payable"]
# the one type of a payments-service token reference, wherever one is taken (a guest profile's
# stored methods, a company's, payments, pre-authorizations, walk-in guarantees, the kiosk): a
# reference stored is one a payment accepts
PaymentMethodId = Annotated[str, msgspec.Meta(min_length=3, max_length=128,
                                              pattern=r"^[A-Za-z0-9_]+$",
                                              description="payments-service token reference")]
Quantity = Annotated[int, msgspec.Meta(ge=1, le=1000)]
Rate = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{1,6}(\.[0-9]{1,4})?$",
                                   description="percent (7 = 7 %) or an amount per night")]


class TaxRuleIn(Strict):
    code: Code
    kind: Literal["percentage", "per_night"]
    rate: Rate
    inclusive: bool = False
    name: Annotated[str, msgspec.Meta(max_length=120)] = ""


class TransactionCodeIn(Strict):
    code: Code
    name: Name
    category: Category
    tax_rules: Annotated[list[TaxRuleIn], msgspec.Meta(max_length=10)] = []
    ledger_account: LedgerAccount = "other_revenue"
    active: bool = True


class TransactionCodePatch(Strict):
    code: Code | UnsetType = UNSET
    name: Name | UnsetType = UNSET
    category: Category | UnsetType = UNSET
    tax_rules: Annotated[list[TaxRuleIn], msgspec.Meta(max_length=10)] | UnsetType = UNSET
    ledger_account: LedgerAccount | UnsetType = UNSET
    active: bool | UnsetType = UNSET


class TaxRuleOut(Out):
    code: str
    kind: Literal["percentage", "per_night"]
    rate: str
    inclusive: bool
    name: str = ""


class TransactionCodeOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    code: str
    name: str
    category: Category
    tax_rules: list[TaxRuleOut]
    ledger_account: str
    active: bool


def transaction_code_out(t: object) -> TransactionCodeOut:
    return TransactionCodeOut(
        id=t.id, property_id=t.property_id, code=t.code, name=t.name, category=t.category,
        tax_rules=[msgspec.convert(r, TaxRuleOut) for r in (t.tax_rules or [])],
        ledger_account=t.ledger_account, active=t.active)


# -- gift vouchers ------------------------------------------------------------------------------

class GiftVoucherIn(Strict):
    amount: Amount
    currency: Currency | None = None
    code: Code | None = None
    expires_on: date | None = None
    recipient_name: Name | None = None


class GiftVoucherOut(Out):
    id: uuid.UUID
    property_id: uuid.UUID
    code: str
    currency: str
    initial_amount: Amount
    balance: Amount
    status: VoucherStatus
    expires_on: date | None
    recipient_name: str | None
    created_at: datetime


def gift_voucher_out(v: object) -> GiftVoucherOut:
    return GiftVoucherOut(id=v.id, property_id=v.property_id, code=v.code, currency=v.currency,
                          initial_amount=quantize(v.initial_amount, v.currency),
                          balance=quantize(v.balance, v.currency), status=v.status,
                          expires_on=v.expires_on, recipient_name=v.recipient_name,
                          created_at=v.created_at)


class VoucherQuery(msgspec.Struct, kw_only=True):
    code: Code | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=200)] = 50
    cursor: Cursor | None = None


# -- postings -----------------------------------------------------------------------------------

class ChargeIn(Strict):
    """Post a charge by transaction code (amount is the unit price; taxes per the code's rules)."""

    transaction_code: Code
    amount: Amount
    quantity: Quantity = 1
    description: Text | None = None


class CorrectionIn(Strict):
    """Reverse a charge line (and its tax lines) with negative lines; nothing is edited."""

    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


class MoveChargeIn(Strict):
    """Move a charge (and its tax lines) to another open folio of the same stay."""

    target_folio_id: uuid.UUID


class AllowanceIn(Strict):
    """A credit (discount) against a transaction code, with its taxes reversed."""

    transaction_code: Code
    amount: Amount
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


class ExtraFolioIn(Strict):
    """An extra folio of the stay (split billing), e.g. for the company's share."""

    folio_type: Literal["EXTRA", "COMPANY"] = "EXTRA"


class PaymentIn(Strict):
    amount: Amount
    method: Literal["CARD", "CASH", "VOUCHER", "BANK_TRANSFER"] = "CARD"
    payment_method_id: PaymentMethodId | None = None
    voucher_code: Code | None = None
    pre_authorization_id: uuid.UUID | None = None


class PreAuthorizationIn(Strict):
    amount: Amount
    payment_method_id: PaymentMethodId
