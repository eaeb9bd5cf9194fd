"""Cashiering tables beside the folio: transaction codes, gift vouchers, numbered invoices and the
ledger postings waiting to be sent (an outbox for the ledger service). Fields and indexes only."""

from __future__ import annotations

import peewee

from pms.db.base import AggregateModel, JsonField, MoneyField, TenantModel, UtcDateTimeField
from pms.models.property import Property


class TransactionCode(AggregateModel):
    """What a charge is: category, tax rules (see pms.domain.tax) and the ledger revenue account."""

    property = peewee.ForeignKeyField(Property, backref="transaction_codes", on_delete="RESTRICT",
                                       index=False)
    code = peewee.CharField(max_length=32)
    name = peewee.CharField(max_length=200)
    category = peewee.CharField(max_length=16)  # room, tax, F&B, mini bar, other
    tax_rules = JsonField(default=list)
    ledger_account = peewee.CharField(max_length=64, default="other_revenue")
    active = peewee.BooleanField(default=True)

    class Meta:
        table_name = "transaction_code"
        indexes = ((("env_id", "property", "code"), True),)


class GiftVoucher(AggregateModel):
    property = peewee.ForeignKeyField(Property, backref="gift_vouchers", on_delete="RESTRICT",
                                       index=False)
    code = peewee.CharField(max_length=32)
    currency = peewee.CharField(max_length=3)
    initial_amount = MoneyField()
    balance = MoneyField()
    status = peewee.CharField(max_length=16)
    expires_on = peewee.DateField(null=True)
    recipient_name = peewee.CharField(max_length=200, null=True)

    class Meta:
        table_name = "gift_voucher"
        indexes = ((("env_id", "property", "code"), True),)


class Invoice(TenantModel):
    """The numbered invoice of one closed folio; `document` is the frozen JSON rendition."""

    property = peewee.ForeignKeyField(Property, on_delete="RESTRICT", index=False)
    folio_id = peewee.UUIDField()
    number = peewee.CharField(max_length=32)
    issued_at = UtcDateTimeField()
    document = JsonField()

    class Meta:
        table_name = "invoice"
        indexes = ((("env_id", "folio_id"), True), (("env_id", "property", "number"), True))


class InvoiceSequence(TenantModel):
    """The last invoice number of a property (locked while a number is taken)."""

    property = peewee.ForeignKeyField(Property, on_delete="RESTRICT", index=False)
    last_number = peewee.IntegerField(default=0)

    class Meta:
        table_name = "invoice_sequence"
        indexes = ((("env_id", "property"), True),)


class LedgerPosting(TenantModel):
    """A double-entry movement recorded with the change it settles, sent after commit,
    idempotent by `idempotency_key`; PENDING rows are re-sent by the reconciler."""

    property = peewee.ForeignKeyField(Property, on_delete="RESTRICT", index=False)
    idempotency_key = peewee.CharField(max_length=200)
    currency = peewee.CharField(max_length=3)
    lines = JsonField()
    memo = peewee.CharField(max_length=200, default="")
    status = peewee.CharField(max_length=16, default="PENDING")
    external_id = peewee.CharField(max_length=64, null=True)
    attempts = peewee.IntegerField(default=0)
    posted_at = UtcDateTimeField(null=True)

    class Meta:
        table_name = "ledger_posting"
        indexes = ((("env_id", "idempotency_key"), True), (("env_id", "status"), False))
