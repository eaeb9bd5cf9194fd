"""Migration 070: fiscal providers, receipts and deposit invoices, payments in the journal.

`fiscalization` is a document's state at its fiscal provider, one row per document (its `id`
is the document's id, the provider's idempotency key): PENDING until submitted, then SUBMITTED,
ACCEPTED (with the provider's signature, signature counter and signing time), REJECTED or
CORRECTION_NEEDED; the document itself never changes. A receipt or a deposit invoice names the
payment it is issued for in `invoice.refers_to_id` (a credit note names its invoice there): one
document per kind and referent (the unique index). `fiscal_journal` entries of kind PAYMENT or
REFUND chain a payment's record; their `document_id` is the payment's id."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf
from pms.db.shard_keys import create_tenant_model


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    create = create_tenant_model(migrator, database)

    @create
    class Fiscalization(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        version = pw.IntegerField(default=0)
        property_id = pw.UUIDField()
        kind = pw.CharField(max_length=16)
        number = pw.CharField(max_length=64)
        state = pw.CharField(max_length=20)
        provider = pw.CharField(max_length=32)
        attempts = pw.IntegerField(default=0)
        last_error = pw.CharField(max_length=500, null=True)
        submitted_at = pmsf.UtcDateTimeField(null=True)
        signature = pw.CharField(max_length=128, null=True)
        signature_counter = pw.IntegerField(null=True)
        signed_at = pmsf.UtcDateTimeField(null=True)
        transaction_ref = pw.CharField(max_length=64, null=True)

        class Meta:
            table_name = "fiscalization"
            indexes = [(("env_id", "property_id", "state"), False)]

    migrator.sql('CREATE UNIQUE INDEX "invoice_env_id_kind_refers_to_id" '
                 'ON "invoice" ("env_id", "kind", "refers_to_id")')


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.sql('DROP INDEX "invoice_env_id_kind_refers_to_id"')
    migrator.remove_model('fiscalization')
