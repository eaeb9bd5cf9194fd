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
    """A fiscal document of one closed folio, never updated: an INVOICE, or the CREDIT_NOTE that
    cancels one (`refers_to_id`, `reason`). The folio's n-th invoice and its credit note share
    `generation` n; `document` is the frozen JSON rendition (reprints read the same bytes)."""

    property = peewee.ForeignKeyField(Property, on_delete="RESTRICT", index=False)
    folio_id = peewee.UUIDField()
    kind = peewee.CharField(max_length=16, default="INVOICE")
    generation = peewee.IntegerField(default=0)
    refers_to_id = peewee.UUIDField(null=True)
    reason = peewee.CharField(max_length=500, null=True)
    number = peewee.CharField(max_length=32)
    issued_at = UtcDateTimeField()
    document = JsonField()
    # the document's language, chosen and frozen at issue (the JSON's `language` too)
    language = peewee.CharField(max_length=16, null=True)

    class Meta:
        table_name = "invoice"
        indexes = ((("env_id", "folio_id", "kind", "generation"), True),
                   (("env_id", "property", "number"), True))


class InvoiceSequence(TenantModel):
    """The last number of a property's series of documents (one series per kind; locked while a
    number is taken, so numbers are gapless)."""

    property = peewee.ForeignKeyField(Property, on_delete="RESTRICT", index=False)
    series = peewee.CharField(max_length=16, default="INVOICE")
    last_number = peewee.IntegerField(default=0)

    class Meta:
        table_name = "invoice_sequence"
        indexes = ((("env_id", "property", "series"), True),)


class FiscalJournalEntry(TenantModel):
    """One link of a property's fiscal chain: a document's content hash and the previous
    entry's hash, hashed together (pms.services.cashiering.fiscal_journal)."""

    property_id = peewee.UUIDField()
    seq = peewee.IntegerField()
    kind = peewee.CharField(max_length=16)
    document_id = peewee.UUIDField()
    number = peewee.CharField(max_length=64)
    recorded_at = UtcDateTimeField()
    content_hash = peewee.CharField(max_length=64)
    prev_hash = peewee.CharField(max_length=64)
    hash = peewee.CharField(max_length=64)

    class Meta:
        table_name = "fiscal_journal"
        indexes = ((("env_id", "property_id", "seq"), True),)


class FiscalJournalHead(TenantModel):
    """The end of a property's fiscal chain, locked while an entry is appended."""

    property_id = peewee.UUIDField()
    last_seq = peewee.IntegerField(default=0)
    last_hash = peewee.CharField(max_length=64)

    class Meta:
        table_name = "fiscal_journal_head"
        indexes = ((("env_id", "property_id"), True),)


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
