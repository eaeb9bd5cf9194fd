"""Migration 040: `reservation.company_billed`, true while the stay has a
`company_billing` row (booked for, or routed to, a company). Check-out reads the reservation
anyway, so a stay not billed to a company needs no read of `company_billing` (check-out stays
at five round trips). Existing links are marked.
"""

import peewee as pw
from peewee_migrate import Migrator


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.add_fields('reservation', company_billed=pw.BooleanField(default=False))
    # a server default too: writers that name no column of it (the bench's floor and bulk
    # loader, hand-written SQL) stay right, as for every other column added later
    # (SQLite's ADD COLUMN keeps its DEFAULT already)
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("ALTER TABLE reservation ALTER COLUMN company_billed SET DEFAULT FALSE")
    migrator.sql(
        "UPDATE reservation SET company_billed = TRUE WHERE EXISTS ("
        " SELECT 1 FROM company_billing b WHERE b.env_id = reservation.env_id"
        " AND b.reservation_id = reservation.id)")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.remove_fields('reservation', 'company_billed')
