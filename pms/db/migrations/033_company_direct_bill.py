"""Migration 033: direct bill to a company.

`company_receivable_account.open_balance`: what the company owes on its receivable account (the
folio balances moved there at check-out; one part of its exposure). `company_billing.cap`: the
most the company pays of the stay's folio (null: all of it), and `routed_by`: who routed an
existing stay to the company (null when the booking named it).
"""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('company_receivable_account',
                        open_balance=pmsf.MoneyField(default=0))
    migrator.add_fields('company_billing',
                        cap=pmsf.MoneyField(null=True),
                        routed_by=pw.CharField(max_length=255, null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('company_billing', 'cap', 'routed_by')
    migrator.remove_fields('company_receivable_account', 'open_balance')
