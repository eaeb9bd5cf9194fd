"""Migration 063: a company payment method's card summary as the payments service reported it
when the method was submitted (brand, last four digits, expiry), what its approver reads."""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('company_payment_method',
                        brand=pw.CharField(max_length=32, null=True),
                        last4=pw.CharField(max_length=4, null=True),
                        exp_month=pw.SmallIntegerField(null=True),
                        exp_year=pw.SmallIntegerField(null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('company_payment_method', 'brand', 'last4', 'exp_month', 'exp_year')
