"""Gift vouchers: issue, look up the balance, redeem as a folio payment.

`issue_voucher` is its own unit of work. `redeem` runs INSIDE the payment's unit of work and takes
the amount with a guarded UPDATE (balance >= amount), so two redemptions can never overdraw it.
"""

from __future__ import annotations

import secrets
import uuid
from decimal import Decimal

import peewee

from pms.context import Ctx
from pms.db.locking import for_update
from pms.db.pagination import Page, paginate
from pms.db.uow import read_scope, unit_of_work
from pms.domain.money import exact
from pms.domain.states import VOUCHER_INITIAL, VOUCHER_MACHINE, VoucherStatus
from pms.errors import AlreadyExists, Conflict, NotFound, ValidationFailed
from pms.events import event_type
from pms.models.cashiering import GiftVoucher
from pms.schemas.cashiering import GiftVoucherIn, gift_voucher_out
from pms.schemas.common import to_data
from pms.services.catalog.catalog import load_property


class VoucherNotRedeemable(Conflict):
    """Raised when a gift voucher is expired, used up, or short of the amount."""

    code = "voucher_not_redeemable"


def issue_voucher(ctx: Ctx, property_id: uuid.UUID, body: GiftVoucherIn) -> GiftVoucher:
    """Issue a gift voucher with its full balance.

    Raises:
        NotFound: no such property. ValidationFailed: zero amount or a foreign currency.
        AlreadyExists: the code is taken in this property.
    """
    if body.amount <= 0:
        raise ValidationFailed("a voucher amount must be positive",
                               errors=[{"field": "amount", "message": "must be > 0"}])
    with unit_of_work(ctx) as uow:
        prop = load_property(property_id)
        currency = body.currency or prop.currency_code
        amount = exact(body.amount, currency)  # "0.004" is refused, never rounded
        row = GiftVoucher(env_id=ctx.env_id, property=prop.id,
                          code=body.code or f"GV{secrets.token_hex(5).upper()}",
                          currency=currency, initial_amount=amount, balance=amount,
                          status=VOUCHER_INITIAL.value, expires_on=body.expires_on,
                          recipient_name=body.recipient_name)
        try:
            with row._meta.database.atomic():
                row.save(force_insert=True)
        except peewee.IntegrityError as exc:
            raise AlreadyExists(f"a gift voucher {row.code} exists in this property") from exc
        data = to_data(gift_voucher_out(row))
        uow.audit("gift_voucher.issued", row, after=data)
        uow.emit(event_type("gift_voucher", "issued"), row, data)
    return row


def get_voucher(ctx: Ctx, property_id: uuid.UUID, voucher_id: uuid.UUID) -> GiftVoucher:
    """One voucher (balance included). Raises NotFound."""
    with read_scope(ctx):
        row = GiftVoucher.select().where((GiftVoucher.id == voucher_id)
                                         & (GiftVoucher.property == property_id)).first()
        if row is None:
            raise NotFound("no such gift voucher")
        return row


def list_vouchers(ctx: Ctx, property_id: uuid.UUID, *, code: str | None, limit: int,
                  cursor: str | None) -> Page[GiftVoucher]:
    with read_scope(ctx):
        load_property(property_id)
        query = GiftVoucher.select().where(GiftVoucher.property == property_id)
        if code:
            query = query.where(GiftVoucher.code == code)
        return paginate(query, GiftVoucher, limit=limit, cursor=cursor)


def redeem(property_id: uuid.UUID, code: str, amount: Decimal, currency: str, *,
           today: object) -> GiftVoucher:
    """Take `amount` off a voucher inside the caller's unit of work.

    Raises:
        ValidationFailed: unknown code. VoucherNotRedeemable: expired, other currency, or short.
    """
    row = for_update(GiftVoucher.select().where((GiftVoucher.property == property_id)
                                                & (GiftVoucher.code == code))).first()
    if row is None:
        raise ValidationFailed(f"unknown gift voucher {code}",
                               errors=[{"field": "voucher_code", "message": "unknown voucher"}])
    if row.currency != currency or (row.expires_on is not None and row.expires_on < today):
        raise VoucherNotRedeemable("the voucher is expired or in another currency",
                                   balance=str(row.balance), currency=row.currency)
    trigger = "redeem_all" if row.balance == amount else "redeem_part"
    if row.status != VoucherStatus.ACTIVE or row.balance < amount:
        raise VoucherNotRedeemable(f"the voucher balance is {row.balance} {row.currency}",
                                   balance=str(row.balance), currency=row.currency)
    new_status = VOUCHER_MACHINE.transition(row.status, trigger).value
    taken = (GiftVoucher.update(balance=GiftVoucher.balance - amount, status=new_status)
             .where((GiftVoucher.id == row.id) & (GiftVoucher.balance >= amount)).execute())
    if taken != 1:
        raise VoucherNotRedeemable("the voucher balance changed; try again")
    row.balance -= amount
    row.status = new_status
    return row
