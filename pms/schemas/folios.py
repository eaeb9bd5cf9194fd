"""Folio shapes: a folio with its charges, payments and balance (money as decimal strings)."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal

import msgspec

from pms.schemas.common import Out, RoomNumber


class FolioChargeOut(Out):
    id: uuid.UUID
    category: str
    description: str
    amount: Decimal
    currency: str
    quantity: int
    business_date: date
    night: date | None
    kind: str
    created_at: datetime


class FolioPaymentOut(Out):
    id: uuid.UUID
    amount: Decimal
    currency: str
    method: str
    payment_method_id: str | None
    status: str
    created_at: datetime


class FolioOut(Out):
    id: uuid.UUID
    reservation_id: uuid.UUID
    property_id: uuid.UUID
    room_number: str | None
    status: str
    folio_type: str
    currency: str
    charges_total: Decimal
    payments_total: Decimal
    balance: Decimal
    charges: list[FolioChargeOut]
    payments: list[FolioPaymentOut]
    closed_at: datetime | None
    created_at: datetime


class FolioByRoomQuery(msgspec.Struct, kw_only=True):
    room_number: RoomNumber


def charge_out(c: object) -> FolioChargeOut:
    return FolioChargeOut(id=c.id, category=c.category, description=c.description,
                          amount=c.amount, currency=c.currency, quantity=c.quantity,
                          business_date=c.business_date, night=c.night, kind=c.kind,
                          created_at=c.created_at)


def payment_out(p: object) -> FolioPaymentOut:
    return FolioPaymentOut(id=p.id, amount=p.amount, currency=p.currency, method=p.method,
                           payment_method_id=p.payment_method_id, status=p.status,
                           created_at=p.created_at)


def folio_out(f: object, charges: list, payments: list, *, charges_total: Decimal,
              payments_total: Decimal) -> FolioOut:
    return FolioOut(
        id=f.id, reservation_id=f.reservation_id, property_id=f.property_id,
        room_number=f.room_number, status=f.status, folio_type=f.folio_type, currency=f.currency,
        charges_total=charges_total, payments_total=payments_total,
        balance=charges_total - payments_total,
        charges=[charge_out(c) for c in charges], payments=[payment_out(p) for p in payments],
        closed_at=f.closed_at, created_at=f.created_at,
    )
