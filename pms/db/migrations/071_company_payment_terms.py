"""Migration 071: a company receivable's payment terms (`payment_terms_days`, 0..365; 30 for
the accounts kept before): an invoice issued to the company is due that many days after its
issue date, frozen on the invoice (`company_invoice.due_on`)."""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('company_receivable_account',
                        payment_terms_days=pw.SmallIntegerField(default=30))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('company_receivable_account', 'payment_terms_days')
