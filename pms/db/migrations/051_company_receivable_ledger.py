"""Migration 051: routing by charge type and the company's receivable ledger.
`company_billing.categories` / `.transaction_codes` (the folio lines a stay's routing sends
to the company; both null: every line), `company_routing_instruction` (the company's contract
routing, copied onto a stay's routing), `company_ar_item` (each amount moved to or off the
company: direct bills, payments, reversals, write-offs), `company_invoice` with its
`company_invoice_sequence` (gapless numbers per property and series) and
`company_ar_application` (a credit applied to an invoice)."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf
from pms.db.shard_keys import create_tenant_model


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('company_billing', categories=pmsf.JsonField(null=True),
                        transaction_codes=pmsf.JsonField(null=True))
    create = create_tenant_model(migrator, database)

    @create
    class CompanyRoutingInstruction(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        company_profile_id = pw.UUIDField()
        categories = pmsf.JsonField(null=True)
        transaction_codes = pmsf.JsonField(null=True)
        cap = pmsf.MoneyField(null=True)

        class Meta:
            table_name = "company_routing_instruction"
            indexes = [(("env_id", "company_profile_id"), True)]

    @create
    class CompanyArItem(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        company_profile_id = pw.UUIDField()
        property_id = pw.UUIDField()
        kind = pw.CharField(max_length=16)
        amount = pmsf.MoneyField()
        open_amount = pmsf.MoneyField(default=0)
        currency = pw.CharField(max_length=3)
        business_date = pw.DateField()
        reservation_id = pw.UUIDField(null=True)
        folio_id = pw.UUIDField(null=True)
        folio_payment_id = pw.UUIDField(null=True)
        lines = pmsf.JsonField(null=True)
        of_item_id = pw.UUIDField(null=True)
        invoice_id = pw.UUIDField(null=True)
        reference = pw.CharField(max_length=500, null=True)

        class Meta:
            table_name = "company_ar_item"
            indexes = [(("env_id", "company_profile_id", "business_date"), False),
                       (("env_id", "folio_payment_id"), False)]

    @create
    class CompanyInvoice(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        company_profile_id = pw.UUIDField()
        property_id = pw.UUIDField()
        series = pw.CharField(max_length=16)
        number = pw.CharField(max_length=64)
        issued_on = pw.DateField()
        due_on = pw.DateField()
        total = pmsf.MoneyField()
        currency = pw.CharField(max_length=3)

        class Meta:
            table_name = "company_invoice"
            indexes = [(("env_id", "property_id", "number"), True),
                       (("env_id", "company_profile_id", "issued_on"), False)]

    @create
    class CompanyInvoiceSequence(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        property_id = pw.UUIDField()
        series = pw.CharField(max_length=16)
        last_number = pw.IntegerField(default=0)

        class Meta:
            table_name = "company_invoice_sequence"
            indexes = [(("env_id", "property_id", "series"), True)]

    @create
    class CompanyArApplication(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        company_profile_id = pw.UUIDField()
        credit_item_id = pw.UUIDField()
        invoice_id = pw.UUIDField()
        amount = pmsf.MoneyField()

        class Meta:
            table_name = "company_ar_application"
            indexes = [(("env_id", "invoice_id"), False)]


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    for table in ("company_ar_application", "company_invoice_sequence", "company_invoice",
                  "company_ar_item", "company_routing_instruction"):
        migrator.remove_model(table)
    migrator.remove_fields('company_billing', 'categories', 'transaction_codes')
