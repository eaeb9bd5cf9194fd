"""Migration 076: the language of a fiscal document.

- `invoice.language`: the language the document was issued in (the guest profile's language,
  else the property's first `languages` entry, else "en"; pms.services.cashiering.invoices
  `document_language`), frozen at issue with the document's content (its JSON carries it as
  `language` too, so a reprint renders the same labels). Null on documents issued before: they
  print in English, as they did.
"""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('invoice', language=pw.CharField(max_length=16, null=True))


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('invoice', 'language')
