"""Migration 074: an allotment with a release period.

- `rate_plan_allotment.release_days` (null: the allotment only caps what the plan sells, as
  before): the plan's unsold rooms of the night are also held for it, refused to every other
  sale, while the night is more than `release_days` days after the property's business date;
  then they return to the house (pms.domain.availability.channel_hold).
- `pms_take_nights` (PostgreSQL) takes the booking's rate plan and the time of the booking:
  it locks the nights first, then counts them (rooms, maintenance, the other plans' holds)
  in a statement of its own, so a count made after a wait for the locks sees what the holder
  committed; a new argument list, so the old function is dropped (pms.db.function_files).
"""

import peewee as pw
from peewee_migrate import Migrator

from pms.db import function_files


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('rate_plan_allotment', release_days=pw.IntegerField(null=True))
    if isinstance(database, pw.PostgresqlDatabase):
        function_files.apply(migrator, database, "pms_take_nights")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('rate_plan_allotment', 'release_days')
