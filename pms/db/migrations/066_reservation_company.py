"""Migration 066: `reservation.company_profile_id`, the company a stay is booked for, whether or
not the company pays for it (a negotiated rate, a company user's booking, a stay routed to a
company). A company's production (room nights and room revenue by property and month) and its
users' "our bookings" list read it through the index (env_id, company_profile_id,
arrival_date).

- PostgreSQL: a composite foreign key (env_id, company_profile_id) -> profile (env_id, id),
  RESTRICT (pms.db.shard_keys).
- SQLite: the column is added with its REFERENCES profile (id) ON DELETE RESTRICT (SQLite has
  no composite keys to keep; its foreign keys are enforced, pms.db.database).
- Existing stays billed to a company (`company_billing`) are marked with that company.
"""

import peewee as pw
from peewee_migrate import Migrator

from pms.db.shard_keys import tenant_foreign_key_sql

INDEX = "reservation_env_id_company_profile_id_arrival_date"


def migrate(migrator: Migrator, database: pw.Database, *, fake=False):
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.add_fields('reservation', company_profile_id=pw.UUIDField(null=True))
        migrator.sql(tenant_foreign_key_sql("reservation", "company_profile_id", "profile"))
    else:
        migrator.add_fields('reservation', company_profile=pw.ForeignKeyField(
            migrator.orm['profile'], field='id', null=True, on_delete='RESTRICT',
            column_name='company_profile_id', index=False))
    migrator.sql(f"CREATE INDEX {INDEX} ON reservation (env_id, company_profile_id, "
                 "arrival_date)")
    migrator.sql(
        "UPDATE reservation SET company_profile_id = (SELECT b.company_profile_id FROM"
        " company_billing b WHERE b.env_id = reservation.env_id"
        " AND b.reservation_id = reservation.id) WHERE company_billed")


def rollback(migrator: Migrator, database: pw.Database, *, fake=False):
    migrator.sql(f"DROP INDEX {INDEX}")
    if isinstance(database, pw.PostgresqlDatabase):
        migrator.sql("ALTER TABLE reservation DROP CONSTRAINT reservation_company_profile_id_fkey")
        migrator.remove_fields('reservation', 'company_profile_id')
    else:
        migrator.remove_fields('reservation', 'company_profile')
