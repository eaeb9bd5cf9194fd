"""Folio shapes: a folio with its charges, payments and balance (money as decimal strings)."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Literal

import msgspec

from pms.domain.money import quantize
from pms.domain.states import FolioStatus, PaymentStatus
from pms.schemas.common import Out, RoomNumber

# Closed sets a folio shows (responses only; the OpenAPI document marks them extensible)
ChargeCategory = Literal["room", "tax", "F&B", "mini bar", "other"]
ChargeKind = Literal["room", "charge", "tax", "package", "allowance", "correction", "no_show"]
PaymentMethod = Literal["CARD", "CASH", "VOUCHER", "BANK_TRANSFER", "DIRECT_BILL"]
PaymentKind = Literal["PAYMENT", "PRE_AUTH", "REFUND"]
FolioType = Literal["GUEST", "EXTRA", "COMPANY", "MASTER"]  # MASTER: a room block's


class FolioChargeOut(Out):
    id: uuid.UUID
    category: ChargeCategory
    description: str
    amount: Decimal
    currency: str
    quantity: int
    business_date: date
    night: date | None
    kind: ChargeKind
    created_at: datetime
    transaction_code: str | None = None
    parent_id: uuid.UUID | None = None
    reversal_of: uuid.UUID | None = None
    moved_from_folio: uuid.UUID | None = None
    reason: str | None = None


class FolioPaymentOut(Out):
    id: uuid.UUID
    amount: Decimal
    currency: str
    method: PaymentMethod
    payment_method_id: str | None
    status: PaymentStatus
    created_at: datetime
    kind: PaymentKind = "PAYMENT"
    decline_code: str | None = None
    pre_authorization_id: uuid.UUID | None = None
    voucher_code: str | None = None


class ProjectedChargeOut(Out):
    """A line check-out would post on the current business date (room nights not yet charged
    by the night audit, their taxes and packages). Not on the folio yet: no id."""

    category: ChargeCategory
    description: str
    amount: Decimal
    currency: str
    quantity: int
    night: date | None
    kind: ChargeKind
    transaction_code: str | None = None
    projected: bool = True


class FolioOut(Out):
    id: uuid.UUID
    reservation_id: Annotated[uuid.UUID | None, msgspec.Meta(description=(
        "The stay the folio bills; null for a room block's master folio (block_id)"))]
    property_id: uuid.UUID
    room_number: str | None
    status: FolioStatus
    folio_type: FolioType
    currency: str
    charges_total: Decimal
    payments_total: Decimal
    posted_balance: Annotated[Decimal, msgspec.Meta(description=(
        "Posted charges less payments: what the folio's lines add up to so far. Not what the "
        "guest owes before check-out (room nights are posted at check-out or by the night "
        "audit): that is `balance_due`."))]
    charges: list[FolioChargeOut]
    payments: list[FolioPaymentOut]
    closed_at: datetime | None
    created_at: datetime
    block_id: Annotated[uuid.UUID | None, msgspec.Meta(description=(
        "The room block whose master folio this is (folio_type MASTER); null for a stay's"))] = None
    # Before check-out: what check-out on the current business date adds (room nights not yet
    # posted), and the balance including it. Paying `balance_due` lets the guest check out.
    projected_charges: list[ProjectedChargeOut] = []
    projected_total: Annotated[Decimal, msgspec.Meta(description=(
        "What check-out on the current business date would post (projected_charges)"))] = (
        Decimal(0))
    balance_due: Annotated[Decimal, msgspec.Meta(description=(
        "What the guest owes now: posted and projected charges less payments. Paying it "
        "lets the guest check out; negative is a credit to refund."))] = Decimal(0)


class FolioByRoomQuery(msgspec.Struct, kw_only=True):
    room_number: RoomNumber | None = None  # required; checked after the property (404 first)


def charge_out(c: object) -> FolioChargeOut:
    return FolioChargeOut(id=c.id, category=c.category, description=c.description,
                          amount=quantize(c.amount, c.currency), currency=c.currency, quantity=c.quantity,
                          business_date=c.business_date, night=c.night, kind=c.kind,
                          created_at=c.created_at, transaction_code=c.transaction_code,
                          parent_id=c.parent_id, reversal_of=c.reversal_of,
                          moved_from_folio=c.moved_from_folio, reason=c.reason)


def payment_out(p: object) -> FolioPaymentOut:
    return FolioPaymentOut(id=p.id, amount=quantize(p.amount, p.currency), currency=p.currency,
                           method=p.method,
                           payment_method_id=p.payment_method_id, status=p.status,
                           created_at=p.created_at, kind=p.kind, decline_code=p.decline_code,
                           pre_authorization_id=p.pre_authorization_id,
                           voucher_code=p.voucher_code)


def projected_out(row: dict) -> ProjectedChargeOut:
    return ProjectedChargeOut(category=row["category"], description=row["description"],
                              amount=quantize(row["amount"], row["currency"]),
                              currency=row["currency"], quantity=row["quantity"],
                              night=row["night"], kind=row["kind"],
                              transaction_code=row["transaction_code"])


def folio_out(f: object, charges: list, payments: list, *, charges_total: Decimal,
              payments_total: Decimal, projected: list | None = None) -> FolioOut:
    projected_total = quantize(sum((r["amount"] for r in projected or []), Decimal(0)),
                               f.currency)
    return FolioOut(
        id=f.id, reservation_id=f.reservation_id, block_id=f.block_id, property_id=f.property_id,
        room_number=f.room_number, status=f.status, folio_type=f.folio_type, currency=f.currency,
        charges_total=charges_total, payments_total=payments_total,
        posted_balance=charges_total - payments_total,
        charges=[charge_out(c) for c in charges], payments=[payment_out(p) for p in payments],
        closed_at=f.closed_at, created_at=f.created_at,
        projected_charges=[projected_out(r) for r in projected or []],
        projected_total=projected_total,
        balance_due=charges_total - payments_total + projected_total,
    )


class PaymentResultOut(Out):
    """A payment or pre-authorization and the folio after it (status PENDING: the payments
    service did not answer yet; the reconciler finishes it)."""

    payment: FolioPaymentOut
    folio: FolioOut


class InvoiceQuery(msgspec.Struct, kw_only=True):
    format: Annotated[str, msgspec.Meta(max_length=16)] = "json"


class FiscalDocumentOut(Out):
    """A fiscal document of a folio as listed: an INVOICE, a CREDIT_NOTE cancelling the
    invoice `refers_to_id` for `reason`, or the RECEIPT or DEPOSIT_INVOICE of the payment
    `refers_to_id`; `fiscal_state` is its state at the fiscal provider. The whole document:
    GET .../fiscal-documents/{id}."""

    id: uuid.UUID
    kind: Literal["INVOICE", "CREDIT_NOTE", "RECEIPT", "DEPOSIT_INVOICE"]
    number: str
    issued_at: str
    folio_id: uuid.UUID
    charges_total: str
    currency: str
    refers_to_id: uuid.UUID | None = None
    reason: str | None = None
    fiscal_state: Literal["PENDING", "SUBMITTED", "ACCEPTED", "REJECTED",
                          "CORRECTION_NEEDED"] | None = None


class FiscalVerificationOut(Out):
    """The property's fiscal chain checked: every entry links to the one before, every document
    matches what was chained and is in the chain."""

    ok: bool
    entries: int
    documents: int
    last_hash: str
    problems: list[str]
    problem_count: int
    payments: int = 0
