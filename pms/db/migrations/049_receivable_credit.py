"""Migration 049: `company_receivable_account.credit_balance`, what the hotel holds for the
company (a check-out reverted after the company paid its direct bill puts the paid amount
here instead of driving `open_balance` below zero); the next direct bill takes it first."""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('company_receivable_account',
                        credit_balance=pmsf.MoneyField(default=0))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('company_receivable_account', 'credit_balance')
