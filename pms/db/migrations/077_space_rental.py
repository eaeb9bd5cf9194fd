"""Migration 077: a function space's rental charge.

- `function_space.rental_price`: what an event in the space costs for the space itself (null:
  no rental), posted once per event with its resources when the event is ACTUAL.
- `function_space.rental_transaction_code`: the property's transaction code that line posts
  under (set together with the price).
"""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import fields as pmsf


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('function_space',
                        rental_price=pmsf.MoneyField(null=True),
                        rental_transaction_code=pw.CharField(max_length=32, null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('function_space', 'rental_price', 'rental_transaction_code')
