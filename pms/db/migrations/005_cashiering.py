"""Migration 005: cashiering and the night audit (transaction codes, vouchers, payments, audit runs)."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf



def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields(
        'folio_charge',

        transaction_code=pw.CharField(max_length=32, null=True),
        property_id=pw.UUIDField(null=True),
        parent_id=pw.UUIDField(null=True),
        reversal_of=pw.UUIDField(null=True),
        moved_from_folio=pw.UUIDField(null=True),
        reason=pw.CharField(max_length=500, null=True))


    migrator.add_fields(
        'folio_payment',

        kind=pw.CharField(default='PAYMENT', max_length=16),
        idempotency_key=pw.CharField(max_length=255, null=True),
        external_id=pw.CharField(max_length=64, null=True),
        decline_code=pw.CharField(max_length=64, null=True),
        pre_authorization_id=pw.UUIDField(null=True),
        voucher_code=pw.CharField(max_length=32, null=True),
        business_date=pw.DateField(null=True),
        attempts=pw.IntegerField(default=0))


    # Indexes that keep the night audit and the payment reconciler independent of history: the
    # day's charges by (property, business date) with no join (a join planned on the stale
    # statistics of a brand-new date went quadratic), payments by idempotency key and status.
    migrator.add_index('folio_charge', 'env_id', 'property_id', 'business_date', unique=False)
    migrator.add_index('folio_payment', 'env_id', 'idempotency_key', unique=True)
    migrator.add_index('folio_payment', 'env_id', 'status', 'created_at', unique=False)
    migrator.sql("CREATE INDEX reservation_departures ON reservation "
                 "(env_id, property_id, departure_date)")

    @migrator.create_model
    class GiftVoucher(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        code = pw.CharField(max_length=32)
        currency = pw.CharField(max_length=3)
        initial_amount = pmsf.MoneyField()
        balance = pmsf.MoneyField()
        status = pw.CharField(max_length=16)
        expires_on = pw.DateField(null=True)
        recipient_name = pw.CharField(max_length=200, null=True)

        class Meta:
            table_name = "gift_voucher"
            indexes = [(('env_id', 'property', 'code'), True)]

    @migrator.create_model
    class Invoice(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        folio_id = pw.UUIDField()
        number = pw.CharField(max_length=32)
        issued_at = pmsf.UtcDateTimeField()
        document = pmsf.JsonField()

        class Meta:
            table_name = "invoice"
            indexes = [(('env_id', 'folio_id'), True), (('env_id', 'property', 'number'), True)]

    @migrator.create_model
    class InvoiceSequence(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        last_number = pw.IntegerField(default=0)

        class Meta:
            table_name = "invoice_sequence"
            indexes = [(('env_id', 'property'), True)]

    @migrator.create_model
    class LedgerPosting(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        idempotency_key = pw.CharField(max_length=200)
        currency = pw.CharField(max_length=3)
        lines = pmsf.JsonField()
        memo = pw.CharField(default='', max_length=200)
        status = pw.CharField(default='PENDING', max_length=16)
        external_id = pw.CharField(max_length=64, null=True)
        attempts = pw.IntegerField(default=0)
        posted_at = pmsf.UtcDateTimeField(null=True)

        class Meta:
            table_name = "ledger_posting"
            indexes = [(('env_id', 'idempotency_key'), True), (('env_id', 'status'), False)]

    @migrator.create_model
    class NightAuditRun(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        business_date = pw.DateField()
        status = pw.CharField(max_length=16)
        started_at = pmsf.UtcDateTimeField()
        finished_at = pmsf.UtcDateTimeField(null=True)
        attempts = pw.IntegerField(default=1)
        figures = pmsf.JsonField(null=True)
        error = pw.TextField(null=True)

        class Meta:
            table_name = "night_audit_run"
            indexes = [(('env_id', 'property', 'business_date'), True)]

    @migrator.create_model
    class NightAuditStep(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        run = pw.ForeignKeyField(index=False, column_name='run_id', field='id', model=migrator.orm['night_audit_run'], on_delete='CASCADE')
        name = pw.CharField(max_length=40)
        position = pw.IntegerField()
        count = pw.IntegerField(default=0)
        duration_ms = pw.FloatField(default=0.0)
        detail = pmsf.JsonField(null=True)

        class Meta:
            table_name = "night_audit_step"
            indexes = [(('env_id', 'run', 'name'), True)]

    @migrator.create_model
    class TransactionCode(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property = pw.ForeignKeyField(index=False, column_name='property_id', field='id', model=migrator.orm['property'], on_delete='RESTRICT')
        code = pw.CharField(max_length=32)
        name = pw.CharField(max_length=200)
        category = pw.CharField(max_length=16)
        tax_rules = pmsf.JsonField()
        ledger_account = pw.CharField(default='other_revenue', max_length=64)
        active = pw.BooleanField(default=True)

        class Meta:
            table_name = "transaction_code"
            indexes = [(('env_id', 'property', 'code'), True)]


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    """Write your rollback migrations here."""
    for table in ("night_audit_step", "night_audit_run", "transaction_code", "ledger_posting",
                  "invoice_sequence", "invoice", "gift_voucher"):
        migrator.remove_model(table)
    migrator.sql("DROP INDEX IF EXISTS reservation_departures")
    migrator.drop_index('folio_payment', 'env_id', 'status', 'created_at')
    migrator.drop_index('folio_payment', 'env_id', 'idempotency_key')
    migrator.drop_index('folio_charge', 'env_id', 'property_id', 'business_date')
    migrator.remove_fields('folio_payment', 'kind', 'idempotency_key', 'external_id',
                           'decline_code', 'pre_authorization_id', 'voucher_code',
                           'business_date', 'attempts')
    migrator.remove_fields('folio_charge', 'transaction_code', 'property_id', 'parent_id',
                           'reversal_of',
                           'moved_from_folio', 'reason')
