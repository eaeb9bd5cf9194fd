"""Migration 055: documents an auditor accepts. `invoice` holds every fiscal document of a folio
(`kind` INVOICE or CREDIT_NOTE; `generation` counts the folio's corrections: the n-th invoice of
a folio and the credit note that cancels it share generation n, one of each at most), a credit
note `refers_to_id` its invoice and carries its `reason`. `invoice_sequence` numbers each series
(`series`, one per document kind) of a property. `fiscal_journal` chains every document of a
property (each entry holds the hash of the one before: a gap or an edit is detectable),
`fiscal_journal_head` is the chain's end, locked while an entry is appended."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf
from pms.db.shard_keys import create_tenant_model


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('invoice', kind=pw.CharField(max_length=16, default='INVOICE'),
                        generation=pw.IntegerField(default=0),
                        refers_to_id=pw.UUIDField(null=True),
                        reason=pw.CharField(max_length=500, null=True))
    migrator.add_fields('invoice_sequence', series=pw.CharField(max_length=16, default='INVOICE'))
    migrator.sql('DROP INDEX "invoice_env_id_folio_id"')
    migrator.sql('CREATE UNIQUE INDEX "invoice_env_id_folio_id_kind_generation" '
                 'ON "invoice" ("env_id", "folio_id", "kind", "generation")')
    migrator.sql('DROP INDEX "invoicesequence_env_id_property_id"')
    migrator.sql('CREATE UNIQUE INDEX "invoicesequence_env_id_property_id_series" '
                 'ON "invoice_sequence" ("env_id", "property_id", "series")')
    create = create_tenant_model(migrator, database)

    @create
    class FiscalJournalEntry(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        property_id = pw.UUIDField()
        seq = pw.IntegerField()
        kind = pw.CharField(max_length=16)
        document_id = pw.UUIDField()
        number = pw.CharField(max_length=64)
        recorded_at = pmsf.UtcDateTimeField()
        content_hash = pw.CharField(max_length=64)
        prev_hash = pw.CharField(max_length=64)
        hash = pw.CharField(max_length=64)

        class Meta:
            table_name = "fiscal_journal"
            indexes = [(("env_id", "property_id", "seq"), True)]

    @create
    class FiscalJournalHead(pw.Model):
        id = pw.UUIDField(primary_key=True)
        created_at = pmsf.UtcDateTimeField()
        updated_at = pmsf.UtcDateTimeField()
        env_id = pw.UUIDField()
        property_id = pw.UUIDField()
        last_seq = pw.IntegerField(default=0)
        last_hash = pw.CharField(max_length=64)

        class Meta:
            table_name = "fiscal_journal_head"
            indexes = [(("env_id", "property_id"), True)]


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_model('fiscal_journal_head')
    migrator.remove_model('fiscal_journal')
    migrator.sql('DROP INDEX "invoicesequence_env_id_property_id_series"')
    migrator.sql('CREATE UNIQUE INDEX "invoicesequence_env_id_property_id" '
                 'ON "invoice_sequence" ("env_id", "property_id")')
    migrator.sql('DROP INDEX "invoice_env_id_folio_id_kind_generation"')
    migrator.sql('CREATE UNIQUE INDEX "invoice_env_id_folio_id" ON "invoice" ("env_id", "folio_id")')
    migrator.remove_fields('invoice_sequence', 'series')
    migrator.remove_fields('invoice', 'kind', 'generation', 'refers_to_id', 'reason')
